"""A safe stand-in for the ``eval`` that upstream SEAM applies to model output.

Upstream's MuSiQue post-processing (``evaluation_classes/question_answering.py::QA.postprocess``)
calls ``eval`` on a ``{...}`` span of the model's answer and falls back (``except Exception``) when
it raises. ``evaluate`` returns exactly what ``eval`` returns on the expressions such text can
hold without a call, attribute, subscript or a name other than ``True``/``False``/``None``:
constants (str, bytes, int, float, complex, ``...``), f-strings, list/tuple/set/dict displays
(with ``*``/``**`` unpacking), unary and binary operators, ``and``/``or``/``not``, comparisons
(``is`` only against a singleton) and conditional expressions. Nothing from the text is executed:
the tree is interpreted node by node on Python's own values, so results (dict key order, ``1`` vs
``True`` keys, float formatting, ``TypeError`` on unhashable keys) are Python's. One known gap: a
set display whose elements collide in hash (``{-1, -2, 'a'}``: ``hash(-1) == hash(-2)``) may
iterate in another order than under ``eval``, which rebuilds such constant sets while compiling in
ways that also depend on string interning; the set is equal, and MuSiQue's token F1 ignores order.

Outcomes:

* ``ok``: the value, as ``eval`` would return it;
* ``raises``: ``eval`` raises too (syntax errors found by compiling, exactly as ``eval`` compiles
  first, and any exception an operation raises) -- upstream's ``except`` path;
* ``unsupported``: a node outside the list above (a name, call, attribute, subscript, lambda,
  comprehension, walrus, ``is`` between non-singletons). ``eval`` might have succeeded (for
  ``{'a': str}`` upstream gets the builtin), but running it is what we refuse to do; the caller takes
  the ``except`` path and records the difference;
* ``too_large``: the value (or an intermediate one) would exceed the bounds below; ``eval`` would
  spend unbounded memory/time on it (``9**9**9``, ``'a' * 10**12``) or give an int that upstream's
  later ``str()`` refuses (over 4300 digits). Also taken as the ``except`` path and recorded.

Evaluation is iterative (generators on an explicit stack), so deep trees that CPython's compiler
accepts cannot overflow this interpreter's recursion limit.
"""

from __future__ import annotations

import ast
import operator
import re
import sys
import warnings
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

MAX_SOURCE_CHARS = 1_000_000
"""Longer sources are not parsed (an answer of 500 new tokens is a few KB)."""
MAX_INT_BITS = 14_000
"""Larger ints are refused: 14,000 bits stay under CPython's 4300-digit ``str()`` limit."""
MAX_LEN = 1_000_000
"""Longest str/bytes/container any step may produce."""
MAX_WEIGHT = 10_000_000
"""Most scalars a value may hold, nested containers counted with repetition (bounds ``str()``)."""
MAX_FORMAT_NUMBER = 10_000
"""Widths/precisions above this in ``%`` or f-string formats are refused (``'%.9999999f' % 1``)."""

_PARSE_RECURSION_LIMIT = 20_000

Status = Literal["ok", "raises", "unsupported", "too_large"]


@dataclass(frozen=True)
class Outcome:
    """Result of ``evaluate``: ``value`` is meaningful only when ``status == "ok"``."""

    status: Status
    value: Any = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Refused(Exception):
    """Raised with (status, detail) where we do not evaluate (``unsupported`` or ``too_large``)."""


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
_SINGLETONS = (None, True, False, Ellipsis)
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[#0+\- ]*(\*|\d+)?(?:\.(\*|\d*))?")
_DIGITS = re.compile(r"\d+")
_NAME_CHARS = re.compile(r"[A-Za-z0-9_]+")
_SEQUENCES = (str, bytes, list, tuple)


class _Weigher:
    """Scalar count of a value, nested containers counted once per reference (memoised by id, so a
    list repeated 10**6 times inside another costs one walk)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, int]] = {}

    def __call__(self, value: Any) -> int:
        if not isinstance(value, (list, tuple, dict, set, frozenset)):
            return 1
        hit = self._memo.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        total = 1
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        for item in items:
            total += self(item)
            if total > MAX_WEIGHT:
                raise _Refused("too_large", "value holds too many elements")
        self._memo[id(value)] = (value, total)
        return total


def _check_value(value: Any, weigh: _Weigher) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _Refused("too_large", f"int of {value.bit_length()} bits")
    if isinstance(value, (str, bytes, list, tuple, dict, set)) and len(value) > MAX_LEN:
        raise _Refused("too_large", f"{type(value).__name__} of length {len(value)}")
    weigh(value)
    return value


def _check_format_numbers(numbers: list[str | None], what: str) -> None:
    for n in numbers:
        if n == "*":
            raise _Refused("too_large", f"{what} takes a width/precision from its arguments")
        if n and int(n) > MAX_FORMAT_NUMBER:
            raise _Refused("too_large", f"{what} width/precision {n}")


def _precheck_binop(op: type, left: Any, right: Any, weigh: _Weigher) -> None:
    """Refuse operations whose result would blow the bounds, before computing them."""
    ints = isinstance(left, int) and isinstance(right, int)
    if op is ast.Pow and ints and right > 0 and abs(left) > 1:
        if (left.bit_length() - 1) * right > MAX_INT_BITS:  # a lower bound of the result size
            raise _Refused("too_large", "int power too large")
    elif op is ast.LShift and ints and right > 0 and left != 0:
        if left.bit_length() + right > MAX_INT_BITS:
            raise _Refused("too_large", "int shift too large")
    elif op is ast.Mult:
        if ints and left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
            raise _Refused("too_large", "int product too large")
        seq, times = (left, right) if isinstance(right, int) else (right, left)
        if isinstance(seq, _SEQUENCES) and isinstance(times, int) and times > 1:
            if len(seq) * times > MAX_LEN or weigh(seq) * times > MAX_WEIGHT:
                raise _Refused("too_large", "sequence repetition too large")
    elif op is ast.Add and isinstance(left, _SEQUENCES) and type(left) is type(right):
        if len(left) + len(right) > MAX_LEN or weigh(left) + weigh(right) > MAX_WEIGHT:
            raise _Refused("too_large", "concatenation too large")
    elif op is ast.Mod and isinstance(left, (str, bytes)):
        fmt = left.decode("latin-1") if isinstance(left, bytes) else left
        for m in _PERCENT_SPEC.finditer(fmt):
            _check_format_numbers([m.group(1), m.group(2)], "%-format")


Gen = Generator[ast.AST, Any, Any]

# CPython 3.11's AST optimiser (Python/ast_opt.c) folds constant sub-expressions within these limits.
_FOLD_INT_BITS, _FOLD_COLLECTION, _FOLD_STR, _FOLD_TOTAL = 128, 256, 4096, 1024
_FOLD_DEPTH = 200


def _fold_size_ok(op: type, left: Any, right: Any) -> bool:
    """ast_opt.c's safe_multiply / safe_power / safe_lshift / safe_mod guards."""
    ints = isinstance(left, int) and isinstance(right, int)
    if op is ast.Mult:
        if ints:
            return not (left and right and left.bit_length() + right.bit_length() > _FOLD_INT_BITS)
        n, seq = (left, right) if isinstance(left, int) else (right, left)
        if isinstance(n, int) and isinstance(seq, (tuple, frozenset)) and len(seq):
            return 0 <= n <= _FOLD_COLLECTION // len(seq) and (n == 0 or _complexity(seq) <= _FOLD_TOTAL // n)
        if isinstance(n, int) and isinstance(seq, (str, bytes)) and len(seq):
            return 0 <= n <= _FOLD_STR // len(seq)
        return True
    if op is ast.Pow and ints and left and right > 0:
        return left.bit_length() <= _FOLD_INT_BITS // right
    if op is ast.LShift and ints and left and right:
        return 0 <= right <= _FOLD_INT_BITS and left.bit_length() <= _FOLD_INT_BITS - right
    if op is ast.Mod:
        return not isinstance(left, (str, bytes))
    return op is not ast.MatMult


def _complexity(value: Any) -> int:
    if isinstance(value, (tuple, frozenset)):
        return len(value) + sum(_complexity(v) for v in value)
    return 0


def _fold(node: ast.AST, depth: int = 0) -> tuple[bool, Any]:
    """(True, value) when the compiler turns ``node`` into a constant, as ast_opt.c does for
    constants, unary and binary operations on constants and tuples of constants."""
    if depth > _FOLD_DEPTH:
        return False, None
    try:
        if isinstance(node, ast.Constant):
            return True, node.value
        if isinstance(node, ast.UnaryOp):
            ok, value = _fold(node.operand, depth + 1)
            return (True, _UNARY[type(node.op)](value)) if ok else (False, None)
        if isinstance(node, ast.BinOp):
            lok, left = _fold(node.left, depth + 1)
            rok, right = _fold(node.right, depth + 1)
            if lok and rok and _fold_size_ok(type(node.op), left, right):
                return True, _BINOPS[type(node.op)](left, right)
            return False, None
        if isinstance(node, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
            parts = [_fold(e, depth + 1) for e in node.elts]
            return (True, tuple(v for _, v in parts)) if all(ok for ok, _ in parts) else (False, None)
    except Exception:  # the optimiser leaves a raising operation for run time
        return False, None
    return False, None


class _Interpreter:
    def __init__(self) -> None:
        self.weigh = _Weigher()

    def visit(self, node: ast.AST) -> Gen:
        handler = getattr(self, f"_{type(node).__name__}", None)
        if handler is None:
            raise _Refused("unsupported", f"{type(node).__name__} node")
        return handler(node)  # type: ignore[no-any-return]

    def _Expression(self, node: ast.Expression) -> Gen:
        return (yield node.body)

    def _Constant(self, node: ast.Constant) -> Gen:
        return node.value
        yield  # pragma: no cover  (makes this a generator)

    def _items(self, elts: list[ast.expr], out: list[Any] | set[Any]) -> Gen:
        """Fill the list or set ``out`` element by element as the bytecode does (LIST_EXTEND/SET_UPDATE
        for ``*x``, LIST_APPEND/SET_ADD otherwise), within the size bounds."""
        extend, add = (out.extend, out.append) if isinstance(out, list) else (out.update, out.add)
        for elt in elts:
            if isinstance(elt, ast.Starred):
                value = yield elt.value
                if isinstance(value, (list, tuple, dict, set, str, bytes)) and len(out) + len(value) > MAX_LEN:
                    raise _Refused("too_large", "unpacking too large")
                extend(value)
            else:
                add((yield elt))
            if len(out) > MAX_LEN:
                raise _Refused("too_large", "display too large")
        return out

    def _List(self, node: ast.List) -> Gen:
        return _check_value((yield from self._items(node.elts, [])), self.weigh)

    def _Tuple(self, node: ast.Tuple) -> Gen:
        return _check_value(tuple((yield from self._items(node.elts, []))), self.weigh)

    def _Set(self, node: ast.Set) -> Gen:
        # Mirrors the bytecode, because a set's iteration order (hence str()) depends on how it was
        # filled: three or more elements that the compiler folds to constants become a frozenset
        # constant (rebuilt once more from its own iteration order when the compiler merges
        # constants, compile.c merge_consts_recursive) poured into an empty set (SET_UPDATE);
        # otherwise SET_ADD / SET_UPDATE per element.
        out: set[Any] = set()
        folded = [_fold(elt) for elt in node.elts] if len(node.elts) > 2 else []
        if folded and all(ok for ok, _ in folded):
            constant = frozenset(value for _, value in folded)
            # rebuilt when merged, and once more when a str of ASCII name characters in it is
            # interned as the code object is made (codeobject.c intern_string_constants)
            for _ in range(2 if any(isinstance(v, str) and _NAME_CHARS.fullmatch(v) for v in constant) else 1):
                constant = frozenset(tuple(constant))
            out.update(constant)
        else:
            yield from self._items(node.elts, out)
        return _check_value(out, self.weigh)

    def _Dict(self, node: ast.Dict) -> Gen:
        out: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:  # {**mapping}
                mapping = yield value_node
                if not isinstance(mapping, dict):
                    raise TypeError(f"'{type(mapping).__name__}' object is not a mapping")
                out.update(mapping)
            else:
                key = yield key_node
                out[key] = yield value_node
            if len(out) > MAX_LEN:
                raise _Refused("too_large", "dict display too large")
        return _check_value(out, self.weigh)

    def _JoinedStr(self, node: ast.JoinedStr) -> Gen:
        parts = []
        for value in node.values:
            parts.append((yield value))
            if sum(map(len, parts)) > MAX_LEN:
                raise _Refused("too_large", "f-string too long")
        return "".join(parts)

    def _FormattedValue(self, node: ast.FormattedValue) -> Gen:
        value = yield node.value
        if node.conversion != -1:
            value = {ord("s"): str, ord("r"): repr, ord("a"): ascii}[node.conversion](value)
        spec = "" if node.format_spec is None else (yield node.format_spec)
        _check_format_numbers(_DIGITS.findall(spec), "f-string format")
        return _check_value(format(value, spec), self.weigh)

    def _UnaryOp(self, node: ast.UnaryOp) -> Gen:
        return _check_value(_UNARY[type(node.op)]((yield node.operand)), self.weigh)

    def _BinOp(self, node: ast.BinOp) -> Gen:
        left = yield node.left
        right = yield node.right
        _precheck_binop(type(node.op), left, right, self.weigh)
        return _check_value(_BINOPS[type(node.op)](left, right), self.weigh)

    def _BoolOp(self, node: ast.BoolOp) -> Gen:
        value = None
        for operand in node.values:
            value = yield operand
            if bool(value) == isinstance(node.op, ast.Or):
                return value
        return value

    def _Compare(self, node: ast.Compare) -> Gen:
        left = yield node.left
        result: Any = True
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = yield comparator
            if isinstance(op, (ast.Is, ast.IsNot)) and not any(
                    left is s or right is s for s in _SINGLETONS):
                raise _Refused("unsupported", "identity test between non-singletons")
            result = _COMPARE[type(op)](left, right)
            if not result:
                return result
            left = right
        return result

    def _IfExp(self, node: ast.IfExp) -> Gen:
        test = yield node.test
        return (yield node.body) if test else (yield node.orelse)

    def run(self, tree: ast.AST) -> Any:
        stack: list[Gen] = [self.visit(tree)]
        sent: Any = None
        while True:
            try:
                child = stack[-1].send(sent)
            except StopIteration as stop:
                stack.pop()
                if not stack:
                    return stop.value
                sent = stop.value
                continue
            stack.append(self.visit(child))
            sent = None


def _parse(source: str) -> ast.Expression:
    """``ast.parse`` of a source ``compile`` accepted. Building Python AST objects recurses in
    Python (``compile`` does not), so a deep tree the compiler takes (``1+1+...`` 2000 terms) gets a
    raised recursion limit for this one call; the compiler already bounded its depth."""
    try:
        return ast.parse(source, mode="eval")
    except RecursionError:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _PARSE_RECURSION_LIMIT))
        try:
            return ast.parse(source, mode="eval")
        finally:
            sys.setrecursionlimit(limit)


def evaluate(source: str) -> Outcome:
    """What ``eval(source)`` gives on model output, without executing it (module docstring)."""
    if len(source) > MAX_SOURCE_CHARS:
        return Outcome("too_large", detail=f"source of {len(source)} characters")
    source = source.lstrip(" \t")  # eval() of a str skips leading spaces and tabs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eval's SyntaxWarning/DeprecationWarning are not errors
        try:
            compile(source, "<model output>", "eval")  # exactly the errors eval raises before running
        except Exception as exc:  # SyntaxError, ValueError (null bytes), RecursionError, MemoryError
            return Outcome("raises", detail=f"{type(exc).__name__}: {exc}"[:200])
        tree = _parse(source)
    try:
        return Outcome("ok", _Interpreter().run(tree))
    except _Refused as exc:
        status, detail = exc.args
        return Outcome(status, detail=detail)
    except Exception as exc:  # what the operation raises under eval too
        return Outcome("raises", detail=f"{type(exc).__name__}: {exc}"[:200])
