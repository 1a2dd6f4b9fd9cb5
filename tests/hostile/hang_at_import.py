# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: hanging at import ------------------------------------------------------
# The module never finishes importing, and cannot be cut short: it swallows every exception,
# the statement limits' own too (they fire again every 50 ms, and are caught every time).
# Every code question is lost, the written ones are not.
import time as _time

_n = 0
while True:
    try:
        _n += 1
        _time.sleep(0.01)
    except BaseException:
        pass
