"""The safe evaluator against real ``eval``: generated literal expressions (and mangled ones, the way
model output mangles them) must give exactly eval's value, or fail where eval fails."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from seam_repro.metrics.literal import MAX_INT_BITS, evaluate

NUMBERS = st.one_of(
    st.integers(-30, 30).map(str), st.sampled_from(["0", "00", "0x1f", "0o7", "0b101", "1_000", "007", "1.5",
                                                    ".5", "1e3", "1e999", "2j", "1.5e-3j", "1__0"]))
TEXT = st.text(alphabet=st.sampled_from(list("ab 's\"\\n{}_tx,:é")), max_size=8)
STRINGS = st.one_of(TEXT.map(repr), TEXT.map(lambda t: "'" + t + "'"), TEXT.map(lambda t: '"' + t + '"'),
                    TEXT.map(lambda t: "b" + repr(t.encode("ascii", "ignore").decode())),
                    TEXT.map(lambda t: "f" + repr(t)), st.sampled_from(["f'{1+1}'", "f'{None!r:>4}'", "'%s-%d' % ('a', 2)",
                                                                          "r'\\d'", "'a' 'b'", "u'x'"]))
ATOMS = st.one_of(NUMBERS, STRINGS, st.sampled_from(["True", "False", "None", "...", "true", "null", "x"]))
BINOPS = ["+", "-", "*", "/", "//", "%", "|", "&", "^", ">>", "@", "and", "or", "==", "!=", "<", "<=", ">",
          ">=", "in", "not in", "is", "is not"]


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    seq = st.lists(children, max_size=4)
    return st.one_of(
        seq.map(lambda xs: "[" + ", ".join(xs) + "]"),
        seq.map(lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"),
        st.lists(children, min_size=1, max_size=4).map(lambda xs: "{" + ", ".join(xs) + "}"),
        st.lists(st.tuples(children, children), max_size=4).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.tuples(children, st.sampled_from(BINOPS), children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(children, st.sampled_from(["**", "<<"]), st.integers(-3, 6)).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["-", "+", "~", "not "]), children).map(lambda t: f"({t[0]}{t[1]})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        children.map(lambda c: f"[*{c}]"), children.map(lambda c: "{**" + c + "}"),
        children.map(lambda c: f"f'{{{c}}}'"),
    )


EXPRESSIONS = st.recursive(ATOMS, _compound, max_leaves=12)


def _mangle(src: str, cut: int, junk: str) -> str:
    """What model output does to literals: a cut tail, a stray character."""
    cut = cut % (len(src) + 1)
    return src[:cut] + junk + src[cut:]


def _real_eval(src: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", eval(src, {"__builtins__": {}}, {})  # noqa: S307 - the oracle, on generated text only
        except Exception as exc:
            return "raises", type(exc).__name__


def _canonical(value: object, ordered: bool = True) -> object:
    """A comparable form of a value; ``ordered=False`` also forgets the order of lists and tuples
    (for the known gap in ``metrics.literal``: a set of hash-colliding constants can iterate in
    another order than under eval, and ``[*{...}]`` carries that order into a list)."""
    if isinstance(value, (set, frozenset)) or (not ordered and isinstance(value, (list, tuple))):
        return (type(value).__name__, sorted(repr(_canonical(v, ordered)) for v in value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_canonical(v, ordered) for v in value])
    if isinstance(value, dict):
        return ("dict", [(repr(_canonical(k, ordered)), _canonical(v, ordered)) for k, v in value.items()])
    return (type(value).__name__, repr(value))


SET_ORDER_GAP: list[str] = []


def _agree(src: str) -> None:
    ours = evaluate(src)
    assume(ours.status != "too_large")
    if ours.status == "unsupported":
        assume("identity" not in ours.detail)  # `1 is 1` and its continuation: we do not run it
        status, what = _real_eval(src)
        assert status == "raises" and what == "NameError", (src, what)
        return
    status, value = _real_eval(src)
    assert status == ours.status, (src, ours, value)
    if status == "ok":
        if _canonical(value) != _canonical(ours.value):  # only the set-order gap may remain
            assert "{" in src and _canonical(value, False) == _canonical(ours.value, False), src
            SET_ORDER_GAP.append(src)


@pytest.mark.slow(seconds=16)
@settings(max_examples=6000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRESSIONS)
def test_generated_expressions_match_eval(src: str) -> None:
    _agree(src)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRESSIONS, st.integers(0, 10_000), st.sampled_from(["", "'", '"', "}", "{", "]", ",", ":", "\\", " x"]))
def test_mangled_expressions_match_eval(src: str, cut: int, junk: str) -> None:
    _agree(_mangle(src, cut, junk))


@pytest.mark.parametrize("src,expected", [
    ("{'is_answerable': True, 'answer_content': 'X'} or {'is_answerable': False, 'answer_content': ''}",
     {"is_answerable": True, "answer_content": "X"}),
    ("{1: 'a', True: 'b'}", {1: "b"}),
    ("{'a': -1 + 2, 'b': 'x' 'y'}", {"a": 1, "b": "xy"}),
    ("(1, 2) + (3,)", (1, 2, 3)),
    ("None is None", True),
])
def test_examples_from_model_output(src: str, expected: object) -> None:
    out = evaluate(src)
    assert out.ok and out.value == expected and repr(out.value) == repr(eval(src))  # noqa: S307


@pytest.mark.parametrize("src", ["9**9**9", "'a' * 10**12", "[[1] * 10**6] * 10**6", "1 << 10**9",
                                 "2 ** 20000", "'%.99999999f' % 1.0", "f'{1:>999999999}'", "[1] * (10**6) + [2] * 10**6"])
def test_blowups_are_refused_not_computed(src: str) -> None:
    assert evaluate(src).status == "too_large"


@pytest.mark.parametrize("src", ["{'a': __import__('os').system('echo pwned')}", "{'a': print('x')}",
                                 "{'a': (lambda: 1)()}", "{'a': [x for x in (1,)]}", "{'a': (y := 1)}",
                                 "{'a': ().__class__}", "{'a': 'x'[0]}", "{'a': str}"])
def test_names_calls_attributes_subscripts_are_not_run(src: str, capfd: pytest.CaptureFixture[str]) -> None:
    assert evaluate(src).status == "unsupported"
    assert capfd.readouterr().out == ""


def test_deep_input_is_bounded() -> None:
    for src in ["[" * 5000 + "]" * 5000, "-" * 100_000 + "1", "1+" * 100_000 + "1", "{" * 200_000]:
        assert evaluate(src).status == "raises"
    # deep but compilable: evaluated without recursing in Python
    src = "(" * 150 + "1" + "+1)" * 150
    assert evaluate(src).value == eval(src)  # noqa: S307
    for n in (900, 1500, 2000):  # eval compiles these; ast.parse alone would hit the recursion limit
        assert evaluate("1" + "+1" * n).value == n + 1


def test_int_bound_stays_under_str_limit() -> None:
    out = evaluate(f"2 ** {MAX_INT_BITS - 1}")
    assert out.ok and len(str(out.value)) < 4300
