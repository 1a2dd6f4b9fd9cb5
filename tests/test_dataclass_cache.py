"""The dataclass cache: records built from cached code behave exactly as `dataclasses` builds
them, the cache is read only when whole, written only where bytecode is, and never holds
another package's classes."""

from __future__ import annotations

import dataclasses
import marshal
import subprocess
import sys
import textwrap

import pytest

from grader import dataclass_cache
from grader.dataclass_cache import DataclassCache

RECORDS = textwrap.dedent(
    """
    from dataclasses import dataclass, field

    @dataclass(frozen=True)
    class Point:
        x: int
        y: float = 0.5
        tags: tuple = ()

    @dataclass(kw_only=True)
    class Box:
        name: str
        items: list = field(default_factory=list)
        weight: float = field(default=1.0, repr=False)

    @dataclass(order=True)
    class Rank:
        level: int
        label: str = "x"
    """
)


def build(module_name: str) -> dict:
    """The records defined as if in module `module_name` (whatever `dataclasses.exec` is now)."""
    namespace = {"__name__": module_name}
    sys.modules[module_name] = type(sys)(module_name)  # dataclasses reads the module's dict
    sys.modules[module_name].__dict__.update(namespace)
    try:
        exec(compile(RECORDS, f"<{module_name}>", "exec"), sys.modules[module_name].__dict__)
        return sys.modules[module_name].__dict__
    finally:
        del sys.modules[module_name]


def behaviour(ns: dict) -> list:
    """What a user of the records can observe, as plain values."""
    Point, Box, Rank = ns["Point"], ns["Box"], ns["Rank"]
    p = Point(1)
    out: list = [repr(p), p == Point(1, 0.5), p == Point(2), hash(p) == hash(Point(1))]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
    with pytest.raises(TypeError):
        Box("positional")
    a, b = Box(name="a"), Box(name="b")
    a.items.append(1)
    out += [repr(a), b.items, a == Box(name="a", items=[1]), Box.__hash__ is None]
    out += [repr(sorted([Rank(2), Rank(1, "b"), Rank(1, "a")])), Rank(1) < Rank(2)]
    out += [[f.name for f in dataclasses.fields(Box)], str(Point.__init__.__code__.co_varnames)]
    return out


def test_records_built_from_the_cache_behave_as_dataclasses_builds_them(tmp_path, monkeypatch):
    monkeypatch.setattr(dataclasses, "exec", exec, raising=False)  # plain dataclasses
    plain = behaviour(build("grader.plain_records"))
    cache = DataclassCache(tmp_path / "c.marshal")
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    first = behaviour(build("grader.fake_records"))
    assert cache.compiled >= 9 and first == [
        x.replace("plain", "fake") if isinstance(x, str) else x for x in plain
    ]
    cache.save()
    again = DataclassCache(tmp_path / "c.marshal")  # a later process: nothing left to compile
    assert set(again.codes) == set(cache.codes)
    monkeypatch.setattr(dataclasses, "exec", again.exec, raising=False)
    assert behaviour(build("grader.fake_records")) == first and again.compiled == 0


def test_other_packages_records_are_compiled_as_usual_and_never_stored(tmp_path, monkeypatch):
    cache = DataclassCache(tmp_path / "c.marshal")
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    behaviour(build("someone_else.records"))
    assert cache.codes == {} and cache.compiled == 0
    cache.save()
    assert not (tmp_path / "c.marshal").exists()


@pytest.mark.parametrize(
    "content", [b"", b"not marshal at all", marshal.dumps({"a": 1}), marshal.dumps([1, 2])]
)
def test_a_damaged_or_foreign_cache_file_is_ignored(tmp_path, monkeypatch, content):
    path = tmp_path / "c.marshal"
    path.write_bytes(content)
    cache = DataclassCache(path)
    assert cache.codes == {}
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    assert behaviour(build("grader.fake_records"))[1] is True
    cache.save()  # replaced by a whole one
    assert set(DataclassCache(path).codes) == set(cache.codes) != set()


def test_nothing_is_written_where_bytecode_is_not(tmp_path, monkeypatch):
    cache = DataclassCache(tmp_path / "c.marshal")
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    build("grader.fake_records")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache.save()
    assert not (tmp_path / "c.marshal").exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "c.marshal").mkdir()  # a folder where the file should be: left as it is
    cache.save()
    assert (tmp_path / "c.marshal").is_dir() and list(tmp_path.iterdir()) == [
        tmp_path / "c.marshal"
    ]


def test_the_cache_grows_no_further_than_its_cap(tmp_path, monkeypatch):
    path = tmp_path / "c.marshal"
    stale = {f"# an old record's text {i}": compile("pass", "<string>", "exec") for i in range(5)}
    path.write_bytes(marshal.dumps(stale))
    monkeypatch.setattr(dataclass_cache, "MAX_ENTRIES", 5)
    cache = DataclassCache(path)
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    build("grader.fake_records")
    cache.save()
    kept = DataclassCache(path).codes
    assert kept and not set(kept) & set(stale)


def test_a_grade_s_records_come_from_the_cache_in_a_fresh_process(tmp_path):
    """The grader installs the cache when it is imported: a second process compiles none of the
    records the first one stored."""
    probe = textwrap.dedent(
        f"""
        import sys
        sys.dont_write_bytecode = False
        from pathlib import Path
        from grader import dataclass_cache
        cache = dataclass_cache.install()
        cache.path = Path({str(tmp_path / "c.marshal")!r})
        cache.codes = dataclass_cache._read(cache.path)
        cache.compiled = 0
        import grader.records, grader.questions, grader.sandbox.session
        print(cache.compiled, len(cache.used))
        cache.save()
        """
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    (first_compiled, first_used), (second_compiled, second_used) = runs
    assert int(first_compiled) >= 40 and int(second_compiled) == 0 and first_used == second_used
