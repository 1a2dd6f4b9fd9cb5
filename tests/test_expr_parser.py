"""The safe expression parser: reading rules, LaTeX, limits, and student-readable errors."""

from __future__ import annotations

import time

import pytest
import sympy

from grader.written.expr.canonical import canonical
from grader.written.expr.errors import ExprError
from grader.written.expr.latex import latex_to_plain
from grader.written.expr.nodes import BinOp, Op
from grader.written.expr.parser import interpret, parse, read
from grader.written.expr.printing import readable

d, d_ff, d_k, x, y = (sympy.Symbol(n, real=True) for n in ("d", "d_ff", "d_k", "x", "y"))
alpha = sympy.Symbol("alpha", real=True)


def same(text: str, symbols: list[str], want: sympy.Expr) -> None:
    got = parse(text, symbols)
    assert sympy.simplify(got - want) == 0, (text, got, want)


@pytest.mark.parametrize(
    ("text", "symbols", "want"),
    [
        ("2 d", ["d"], 2 * d),
        ("4d^2", ["d"], 4 * d**2),
        ("4d**2", ["d"], 4 * d**2),
        ("d d_ff", ["d", "d_ff"], d * d_ff),
        ("dd_ff", ["d", "d_ff"], d * d_ff),  # longest match, never d*d*_ff
        ("d_ff", ["d", "d_ff"], d_ff),
        ("d_{ff}", ["d", "d_ff"], d_ff),
        ("2(x+1)", ["x"], 2 * x + 2),
        ("(x+1)(x-1)", ["x"], x**2 - 1),
        ("x(x+1)", ["x"], x**2 + x),  # a symbol before ( multiplies
        ("exp(x)", ["x"], sympy.exp(x)),  # a function before ( is a call
        ("sigmoid(x)(1-sigmoid(x))", ["x"], sympy.exp(-x) / (1 + sympy.exp(-x)) ** 2),
        ("xexp(x)", ["x"], x * sympy.exp(x)),
        ("2^3^2", [], sympy.Integer(512)),  # right-associative
        ("-x^2", ["x"], -(x**2)),
        ("2^-1", [], sympy.Rational(1, 2)),
        ("1/2d", ["d"], d / 2),  # left to right, with a note
        (
            "a/b/c",
            ["a", "b", "c"],
            sympy.Symbol("a", real=True)
            / sympy.Symbol("b", real=True)
            / sympy.Symbol("c", real=True),
        ),
        ("0.5", [], sympy.Rational(1, 2)),
        ("1e-5", [], sympy.Rational(1, 100000)),
        ("12", [], sympy.Integer(12)),
        (".25x", ["x"], x / 4),
        ("alpha x", ["alpha", "x"], alpha * x),
        ("α x", ["alpha", "x"], alpha * x),
        ("αx", ["α", "x"], alpha * x),
        ("sigma(x)", ["x"], 1 / (1 + sympy.exp(-x))),
        ("σ(x)", ["x"], 1 / (1 + sympy.exp(-x))),
        ("sigma(x)", ["sigma", "x"], sympy.Symbol("sigma", real=True) * x),  # declared: a product
        ("e^x", ["x"], sympy.exp(x)),
        ("pi x", ["x"], sympy.pi * x),
        ("ln(x)", ["x"], sympy.log(x)),
        ("log x^2", ["x"], sympy.log(x**2)),
        ("√x", ["x"], sympy.sqrt(x)),
        ("x²+y³", ["x", "y"], x**2 + y**3),
        ("x − y", ["x", "y"], x - y),
        ("x × y", ["x", "y"], x * y),
        ("x · y", ["x", "y"], x * y),
        ("x ⋅ y", ["x", "y"], x * y),
        ("{x+1}^2", ["x"], (x + 1) ** 2),
        ("max(x, y, 1)", ["x", "y"], sympy.Max(x, y, 1)),
        ("abs(x)", ["x"], sympy.Abs(x)),
        ("log(8, 2)", [], sympy.Integer(3)),
        ("  x \n + 1\t", ["x"], x + 1),
        ("1/sqrt(dk)", ["d_k"], 1 / sympy.sqrt(d_k)),  # d_k without its underscore
        ("2 dmodel", ["d_model", "h"], 2 * sympy.Symbol("d_model", real=True)),
    ],
)
def test_reading_rules(text: str, symbols: list[str], want: sympy.Expr) -> None:
    same(text, symbols, want)


@pytest.mark.parametrize(
    ("latex", "symbols", "want"),
    [
        ("$\\frac{1}{\\sqrt{d_k}}$", ["d_k"], 1 / sympy.sqrt(d_k)),
        ("$x^{2} \\cdot y$", ["x", "y"], x**2 * y),
        ("$\\left(x+y\\right) \\times x$", ["x", "y"], (x + y) * x),
        ("$\\exp(x) + \\log x$", ["x"], sympy.exp(x) + sympy.log(x)),
        ("$\\tanh(x)$", ["x"], sympy.tanh(x)),
        ("$\\sigma(x)$", ["x"], 1 / (1 + sympy.exp(-x))),
        ("$\\alpha_1 x$", ["alpha_1", "x"], sympy.Symbol("alpha_1", real=True) * x),
        ("$d_{ff} d$", ["d", "d_ff"], d * d_ff),
        ("$\\sqrt[3]{x}$", ["x"], x ** sympy.Rational(1, 3)),
        ("$e^{-x}$", ["x"], sympy.exp(-x)),
        ("$$\\dfrac{x}{2}$$", ["x"], x / 2),
        ("$\\mathrm{exp}(x)$", ["x"], sympy.exp(x)),
        ("$2\\,x$", ["x"], 2 * x),
    ],
)
def test_latex(latex: str, symbols: list[str], want: sympy.Expr) -> None:
    same(latex, symbols, want)


@pytest.mark.parametrize(
    ("latex", "symbols", "want"),
    [
        ("\\frac{1}{\\sqrt{d_k}}", ["d_k"], 1 / sympy.sqrt(d_k)),
        ("1/\\sqrt{d_k}", ["d_k"], 1 / sympy.sqrt(d_k)),
        (
            "\\sigma(x)(1 - \\sigma(x))",
            ["x"],
            1 / (1 + sympy.exp(-x)) * (1 - 1 / (1 + sympy.exp(-x))),
        ),
        ("x^{2} \\cdot y", ["x", "y"], x**2 * y),
        ("\\alpha_1 x", ["alpha_1", "x"], sympy.Symbol("alpha_1", real=True) * x),
    ],
)
def test_latex_without_dollar_signs_is_read_when_it_uses_a_latex_command(
    latex: str, symbols: list[str], want: sympy.Expr
) -> None:
    """A backslash command has no meaning in the plain syntax: the text is read as LaTeX."""
    same(latex, symbols, want)


def test_latex_translation_is_plain_text() -> None:
    assert latex_to_plain("\\frac{a}{b}") == "((a)/(b))"


def test_interpretation_is_echoed_with_explicit_products() -> None:
    p = interpret("d(12d+13)", ["d"])
    assert p.shown == "d*(12*d + 13)"
    assert interpret("1/2d", ["d"]).shown == "(1/2)*d"
    assert interpret("1/2d", ["d"]).notes  # a warning about the reading
    assert interpret("-(-x)", ["x"]).shown == "-(-x)"
    assert readable(parse("4d^2", ["d"])) == "4*d^2"


def test_trusted_mode_takes_every_name_as_a_symbol() -> None:
    p = interpret("foo + bar_2 exp(x)", None)
    assert p.symbols == {"foo", "bar_2", "x"}


@pytest.mark.parametrize(
    ("text", "symbols", "fragment"),
    [
        ("abc", ["a_bc", "ab_c"], "unknown name 'abc'"),  # two symbols without underscores
        ("q", ["x", "y"], "unknown name 'q'"),
        ("q", ["x", "y"], "x, y"),
        ("x +", ["x"], "ends too early"),
        ("(x", ["x"], "never closed"),
        ("x)", ["x"], "no opening bracket"),
        ("x[0]", ["x"], "square brackets"),
        ("x!", ["x"], "factorial"),
        ("y = x", ["x", "y"], "no '='"),
        ("x.real", ["x"], "'.'"),
        ("'x'", ["x"], "quotes"),
        ("exp", ["x"], "needs an argument"),
        ("exp(x, x)", ["x"], "takes 1 argument"),
        ("", ["x"], "empty"),
        ("x\x07", ["x"], "control character"),
        ("x" * 3000, ["x"], "too long"),
        ("(" * 100 + "x" + ")" * 100, ["x"], "nested too deeply"),
        ("x^x^x^x^x", ["x"], "nested too deeply"),
        ("x^2000", ["x"], "exponent is too large"),
        ("9^9^9", [], "too large"),
        ("1" * 31, [], "too many digits"),
        ("1e999", [], "out of range"),
        ("1/0", [], "division by zero"),
        ("$\\input{x}$", ["x"], "\\input is not supported"),
        ("$x$ + $y$", ["x", "y"], "single pair"),
        ("\\input{x}", ["x"], "between $ signs"),  # not a command the reader knows
        ("$x_{t-1}$", ["x"], "subscript"),
        ("tanh^-1(x)", ["x"], "positive whole number"),
        ("$\\tanh^{x}(x)$", ["x"], "positive whole number"),
        ("1 - \tanh(x)^2", ["x"], "literal string in single quotes"),
        ("x +\tx", ["x"], "TAB character"),
        ("x + \x0c", ["x"], "form feed"),
        ("eps", ["epsilon_1"], "unknown name 'eps'"),
    ],
)
def test_errors_are_readable(text: str, symbols: list[str], fragment: str) -> None:
    with pytest.raises(ExprError) as info:
        parse(text, symbols)
    assert fragment in str(info.value)
    with pytest.raises(ExprError) as info:  # the tree guards alone, without sympy
        read(text, symbols)
    assert fragment in str(info.value)


def test_not_a_string() -> None:
    with pytest.raises(ExprError, match="as text"):
        parse(12, ["x"])  # type: ignore[arg-type]


def test_limits_apply_before_any_evaluation() -> None:
    for text in ("9^9^9^9", "10**10**10", "2^(10^12)", "(" * 5000 + ")" * 5000, "x" * 100_000):
        for reader in (parse, read):
            start = time.perf_counter()
            with pytest.raises(ExprError):
                reader(text, ["x"])
            assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("x^(10^12)", "exponent is too large"),
        ("x^(-2000)", "exponent is too large"),
        ("(x+1)^(4000/2)", "exponent is too large"),
        ("10^1000^2", "too large"),
        ("(10^999)^10 * (10^999)^10", "too large"),
        ("x / (3 - 3)", "division by zero"),
        ("(2 - 2)^(-1)", "division by zero"),
    ],
)
def test_tree_guards(text: str, fragment: str) -> None:
    with pytest.raises(ExprError, match=fragment.replace("(", r"\(")):
        read(text, ["x"])


def test_tree_guards_allow_harmless_powers() -> None:
    for text in ("1^(10^12)", "(-1)^(10^12) x", "0^(10^12) + x", "x^1000", "2^(1/2)", "10^999"):
        read(text, ["x"])


def test_read_keeps_the_tree_and_builds_sympy_on_demand() -> None:
    p = read("d(12d+13)", ["d"])
    assert p.shown == "d*(12*d + 13)" and isinstance(p.tree, BinOp) and p.tree.op is Op.IMUL
    assert sympy.expand(p.expr) == 12 * d**2 + 13 * d


@pytest.mark.parametrize(
    ("texts", "symbols", "want"),
    [
        (["d(12d+13)", "(12d + 13) d", "d*(13 + 12*d)"], ["d"], "d*(12*d + 13)"),
        (["12 d^2 + 13 d", "13d + 12 d d", "d^2*12 + 13*d"], ["d"], "12*d^2 + 13*d"),
        (["1/2d", "d/2", "0.5 d"], ["d"], "d/2"),
        (["1/(2d)", "(2d)^-1", "1/d/2"], ["d"], "1/(2*d)"),
        (["-u_o + p u", "p u - u_o", "u p - u_o"], ["p", "u", "u_o"], "p*u - u_o"),
        (["e^(-x^2)", "exp(-x^2)", "exp(-(x*x))"], ["x"], "exp(-x^2)"),
        (["ln(x) + 1", "1 + log(x)"], ["x"], "log(x) + 1"),
        (["max(y, x)", "max(x, y)"], ["x", "y"], "max(x, y)"),
        (["x - x", "0"], ["x"], "0"),
        (["$\\frac{1}{\\sqrt{d_k}}$", "1/sqrt(d_k)"], ["d_k"], "1/sqrt(d_k)"),
    ],
)
def test_canonical_groups_equal_writings(texts: list[str], symbols: list[str], want: str) -> None:
    assert {canonical(read(t, symbols).tree) for t in texts} == {want}


def test_canonical_does_not_expand_and_stays_small() -> None:
    assert canonical(read("(a+b)(a-b)", ["a", "b"]).tree) == "(a + b)*(a - b)"
    start = time.perf_counter()
    text = canonical(read("(10^999 x)^1000 * 10^999^1", ["x"]).tree)
    assert time.perf_counter() - start < 0.5 and len(text) < 5000


def test_parser_never_calls_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval/sympify called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(sympy, "sympify", forbidden)
    assert parse("d(12d+13) + exp(-x)/sqrt(d)", ["d", "x"]) is not None
    assert parse("$\\frac{1}{\\sqrt{d}}$", ["d"]) is not None


def test_bad_declared_symbol_is_the_instructors_error() -> None:
    with pytest.raises(ValueError, match="bad symbol name"):
        parse("x", ["x y"])


def test_toml_escapes_inside_latex_are_put_back() -> None:
    # "$\\tanh(x) \\times \\beta$" in a TOML basic string arrives with a tab and a backspace
    text = "$\tanh(x) \times \x08eta + \x0crac{1}{2}$"
    same(
        text, ["x", "beta"], sympy.tanh(x) * sympy.Symbol("beta", real=True) + sympy.Rational(1, 2)
    )


@pytest.mark.parametrize(
    ("text", "symbols", "want"),
    [
        ("$1 - \\tanh^2(z)$", ["z"], "1 - tanh(z)^2"),
        ("$\\tanh^2 z$", ["z"], "tanh(z)^2"),
        ("$\\sin^2(x)$", ["x"], "sin(x)^2"),
        ("$\\tanh^{2}\\left(z\\right)$", ["z"], "tanh(z)^2"),
        ("tanh^2(z)", ["z"], "tanh(z)^2"),
        ("sigmoid^3(x) y", ["x", "y"], "sigmoid(x)^3*y"),
        ("$\\sigma^2(x)$", ["x"], "sigmoid(x)^2"),
        ("$\\sigma^2 x$", ["sigma", "x"], "sigma^2*x"),  # a declared sigma is a symbol
    ],
)
def test_latex_function_powers_apply_to_the_value(text: str, symbols: list[str], want: str) -> None:
    # \tanh^2(z) is the standard notation for (tanh z)^2 (issue 18)
    assert read(text, symbols).shown == want


@pytest.mark.parametrize(
    ("text", "symbols", "want"),
    [
        ("ε", ["eps"], "eps"),
        ("epsilon x", ["eps", "x"], "eps*x"),
        ("$\\varepsilon$", ["eps"], "eps"),
        ("ε₁ + ε_2", ["eps_1", "eps_2"], "eps_1 + eps_2"),
        ("λ", ["lam"], "lam"),
        (
            "α β γ δ η θ μ σ τ φ ω",
            [
                "alpha",
                "beta",
                "gamma",
                "delta",
                "eta",
                "theta",
                "mu",
                "sigma",
                "tau",
                "phi",
                "omega",
            ],
            "alpha*beta*gamma*delta*eta*theta*mu*sigma*tau*phi*omega",
        ),
        ("ε", ["epsilon"], "epsilon"),
    ],
)
def test_unicode_greek_reads_as_the_declared_symbol(
    text: str, symbols: list[str], want: str
) -> None:
    assert read(text, symbols).shown == want


def test_a_symbol_written_without_its_underscore_is_read_with_a_note() -> None:
    parsed = read("1/sqrt(dk)", ["d_k"])
    assert parsed.note == "`dk` was read as `d_k`"
    assert read("1/sqrt(d_k)", ["d_k"]).note is None


@pytest.mark.parametrize(
    "text",
    [
        "sigma(u_o^T v_c) u_o",
        "sigma(u_o^Tv_c) u_o",
        "σ(u_oᵀ v_c) u_o",
        "σ(u_o⊤v_c) u_o",
        "$\\sigma(u_o^\\top v_c) u_o$",
        "$\\sigma(u_o^{T} v_c) u_o$",
        "$\\sigma(u_o^{\\intercal} v_c) u_o$",
    ],
)
def test_a_transpose_is_read_where_no_symbol_t_is_declared(text: str) -> None:
    """Vectors are compared as numbers (one dimension), where u^T v is u v."""
    u_o, v_c = (sympy.Symbol(n, real=True) for n in ("u_o", "v_c"))
    same(text, ["u_o", "v_c"], u_o / (1 + sympy.exp(-u_o * v_c)))
    assert read(text, ["u_o", "v_c"]).note == "`^T` was read as a transpose"


def test_with_a_declared_symbol_t_the_caret_is_a_power() -> None:
    same("x^T", ["x", "T"], x ** sympy.Symbol("T", real=True))
