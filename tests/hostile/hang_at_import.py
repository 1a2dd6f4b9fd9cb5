# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: hanging at import ------------------------------------------------------
# The module never finishes importing: every code question is lost, the written ones are not.
_n = 0
while True:
    _n += 1
