"""SQL a source folder declares as data, held to scalar expressions over its own columns.

A source folder without Python files is data, not code (README, "Trust"): the
SQL in its ``jobs.json`` (``columns`` values, ``capacity.gpus``) is pasted into
the views and queries mltraces runs, so before it is used each expression is
parsed by DuckDB's own parser (``json_serialize_sql``: parsed, never bound or
run) as ``SELECT (<expression>) FROM <placeholder>``, and the parse tree is
walked: exactly one plain ``SELECT`` of one expression from the placeholder,
and in that expression only column references to the table's own columns,
literals, casts, ``CASE``, comparisons, operators and functions of an
allow-list (scalar ones; aggregates only where an aggregate is expected). No
statement, subquery, table function, file access, window, parameter, star or
schema-qualified name passes, however it is spelled, since nothing is matched
as text. Shipped mappings are held to the same rule.

>>> check_expression("NULLIF(start_time, 0)", ["start_time"])
>>> check_expression("read_text('/etc/hostname')", ["x"])
Traceback (most recent call last):
...
mltraces.exprcheck.UnsafeExpression: calls read_text, which is not an allowed function
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from mltraces.errors import MltracesError

__all__ = ["AGGREGATES", "MAX_CHARACTERS", "SCALAR_FUNCTIONS", "UnsafeExpression",
           "check_expression", "check_expressions", "parse_ahead"]

#: Longest expression accepted (the shipped ones are under 80 characters).
MAX_CHARACTERS = 2_000
#: Deepest nesting the parser is asked to accept (DuckDB's max_expression_depth).
MAX_DEPTH = 64
_PLACEHOLDER = "__mltraces_expression_table__"

#: Scalar functions (and operators, which DuckDB parses as functions) an expression may call.
SCALAR_FUNCTIONS = frozenset({
    # arithmetic and comparison operators
    "+", "-", "*", "/", "//", "%", "^", "**", "||", "~~", "!~~", "~~*", "!~~*", "~~~",
    "&", "|", "<<", ">>", "~",
    # numbers
    "abs", "ceil", "ceiling", "floor", "round", "trunc", "sign", "sqrt", "cbrt", "exp", "ln",
    "log", "log2", "log10", "pow", "power", "mod", "greatest", "least", "isnan", "isinf",
    "isfinite", "even", "gcd", "lcm",
    # nulls and choices
    "nullif", "coalesce", "ifnull", "if", "iff",
    # text
    "lower", "upper", "lcase", "ucase", "trim", "ltrim", "rtrim", "length", "strlen",
    "char_length", "substr", "substring", "left", "right", "replace", "concat", "concat_ws",
    "split_part", "starts_with", "ends_with", "prefix", "suffix", "contains", "position",
    "strpos", "instr", "lpad", "rpad", "repeat", "reverse", "regexp_matches",
    "regexp_full_match", "regexp_extract", "regexp_replace", "like_escape", "ilike_escape",
    "printf", "format", "md5", "hash",
    # times
    "to_timestamp", "epoch", "epoch_ms", "epoch_us", "epoch_ns", "make_timestamp",
    "make_timestamptz", "make_date", "make_time", "strptime", "try_strptime", "strftime",
    "timezone", "date_trunc", "date_part", "datepart", "date_diff", "datediff", "date_add",
    "to_seconds", "to_minutes", "to_hours", "to_days", "to_milliseconds", "to_microseconds",
    "extract", "year", "month", "day", "hour", "minute", "second",
})
#: Aggregates, allowed only where the mapping asks for one (``capacity.gpus``).
AGGREGATES = frozenset({"sum", "avg", "mean", "min", "max", "count", "count_star", "median",
                        "any_value", "first", "last", "fsum", "sumkahan", "kahan_sum"})
_CLASSES = frozenset({"COLUMN_REF", "CONSTANT", "FUNCTION", "CAST", "CASE", "COMPARISON",
                      "CONJUNCTION", "OPERATOR", "BETWEEN", "TYPE"})
_OPERATORS = frozenset({"OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL",
                        "COMPARE_IN", "COMPARE_NOT_IN", "OPERATOR_COALESCE", "OPERATOR_NULLIF"})
#: SELECT-node keys that must stay empty for a plain ``SELECT (expr) FROM t``
_EMPTY = (None, "", [], {}, False, "STANDARD_HANDLING", {"map": []})


class UnsafeExpression(MltracesError, ValueError):
    """The expression is not a scalar expression over the table's own columns."""


def check_expression(text: str, columns: Iterable[str], *, aggregate: bool = False) -> None:
    """Raise :class:`UnsafeExpression` (its message says why) unless ``text`` is one expression
    over ``columns`` made only of allowed parts; ``aggregate`` admits the aggregates."""
    check_expressions([text], columns, aggregate=aggregate)


def parse_ahead(texts: Iterable[str]) -> None:
    """Parse every expression not parsed yet in one call (what several tables' checks then
    read): a view over many mapped tables costs DuckDB one parse call, not one per table."""
    _parse_all(list(dict.fromkeys(t for t in texts if isinstance(t, str) and t not in _trees
                                  and t.strip() and len(t) <= MAX_CHARACTERS)))


def check_expressions(texts: Iterable[str], columns: Iterable[str], *,
                      aggregate: bool = False) -> None:
    """:func:`check_expression` for several expressions over the same columns, parsed in one
    call to DuckDB (a table's mapping is checked at once; each answer is remembered)."""
    texts = list(texts)
    for text in texts:
        _check_text(text)
    _parse_all([t for t in texts if t not in _trees])
    names = frozenset(c.lower() for c in columns)
    for text in texts:
        _checked(text, names, aggregate)


def _check_text(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise UnsafeExpression("is empty; write a SQL expression over the table's columns")
    if len(text) > MAX_CHARACTERS:
        raise UnsafeExpression(f"is {len(text):,} characters long, more than the "
                               f"{MAX_CHARACTERS:,} an expression over a table's columns needs")


@cache
def _checked(text: str, columns: frozenset[str], aggregate: bool) -> None:
    node = _select_node(_trees[text])
    [expression] = node["select_list"]
    for part in _nodes(expression):
        _check_node(part, columns, aggregate)


#: expression text -> DuckDB's parse tree of it (a dict; its "error" set when it did not parse)
_trees: dict[str, dict] = {}
_lock = threading.Lock()


@cache
def _parser() -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET max_expression_depth = {MAX_DEPTH}")
    return con


def _parse_all(texts: list[str]) -> None:
    """DuckDB's parse trees of ``SELECT (text) FROM placeholder`` for every text, in one call
    (parsed only, never bound or run), into :data:`_trees`."""
    import duckdb

    if not texts:
        return
    queries = [f"SELECT ({text}) FROM {_PLACEHOLDER}" for text in texts]
    try:
        with _lock:
            rows = _parser().execute(  # one call, answers in the order asked
                "SELECT i, json_serialize_sql($1[i]) FROM range(1, len($1) + 1) AS t(i) "
                "ORDER BY i", [queries]).fetchall()
        answers = [serialized for _, serialized in rows]
    except duckdb.Error as error:
        reason = f"cannot be parsed ({str(error).splitlines()[0][:160]})"
        _trees.update({t: {"error": True, "mltraces": reason} for t in texts})
        return
    for text, serialized in zip(texts, answers, strict=True):
        try:
            _trees[text] = json.loads(serialized)
        except (ValueError, RecursionError) as error:
            reason = f"cannot be parsed ({str(error).splitlines()[0][:160]})"
            _trees[text] = {"error": True, "mltraces": reason}


def _parse_error(tree: dict) -> None:
    """Raise what a failed parse says."""
    if "mltraces" in tree:
        raise UnsafeExpression(tree["mltraces"])
    message = str(tree.get("error_message", "")).splitlines()[0][:160]
    if "Only SELECT" in message or "statement" in message.lower():
        raise UnsafeExpression(f"is not one expression: it holds a statement ({message})")
    raise UnsafeExpression(f"is not one SQL expression ({message})")


def _select_node(tree: dict) -> dict:
    """The one plain SELECT node; anything more (statements, clauses, items) is refused."""
    if tree.get("error"):
        _parse_error(tree)
    statements = tree.get("statements") or []
    if len(statements) != 1:
        raise UnsafeExpression(f"is not one expression: it makes {len(statements)} statements "
                               "(a ';' or a closing parenthesis in it)")
    node = statements[0].get("node") or {}
    table = node.get("from_table") or {}
    plain = (node.get("type") == "SELECT_NODE" and len(node.get("select_list") or []) == 1
             and table.get("type") == "BASE_TABLE" and table.get("table_name") == _PLACEHOLDER
             and not table.get("schema_name") and not table.get("catalog_name")
             and not table.get("alias") and not table.get("sample")
             and not table.get("at_clause")
             and all(value in _EMPTY for key, value in node.items()
                     if key not in ("type", "select_list", "from_table")))
    if not plain:
        raise UnsafeExpression("is not one expression: it adds to the query around it (a "
                               "closing parenthesis, FROM, WHERE, UNION, ...)")
    if node["select_list"][0].get("alias"):
        raise UnsafeExpression("is not one expression: it names itself (AS)")
    return node


def _nodes(root: Any) -> Iterator[dict]:
    """Every expression node under ``root`` (iteratively: the tree may be deep)."""
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "class" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_node(node: dict, columns: frozenset[str], aggregate: bool) -> None:
    kind = node.get("class")
    if kind not in _CLASSES:
        what = {"SUBQUERY": "a subquery", "WINDOW": "a window function (OVER)",
                "STAR": "a star (*, COLUMNS)", "PARAMETER": "a parameter",
                "LAMBDA": "a lambda", "LAMBDA_REF": "a lambda"}.get(str(kind), f"a {kind} node")
        raise UnsafeExpression(f"holds {what}, which an expression over one row may not")
    if kind == "COLUMN_REF":
        names = node.get("column_names") or []
        if len(names) != 1:
            raise UnsafeExpression(f"names {'.'.join(map(str, names))}: a column of the table "
                                   "itself is named alone, without a table or schema")
        if str(names[0]).lower() not in columns:
            raise UnsafeExpression(f"reads {names[0]!r}, which is not a column of the table")
    elif kind == "FUNCTION":
        _check_function(node, aggregate)
    elif kind == "OPERATOR" and node.get("type") not in _OPERATORS:
        raise UnsafeExpression(f"uses the operator {node.get('type')}, which is not allowed")
    elif kind == "TYPE" and (node.get("catalog") or node.get("schema")):
        raise UnsafeExpression("casts to a type of a schema; use a built-in type")


def _check_function(node: dict, aggregate: bool) -> None:
    name = str(node.get("function_name", "")).lower()
    if node.get("schema") or node.get("catalog"):
        raise UnsafeExpression(f"calls {node.get('schema') or node.get('catalog')}.{name}: "
                               "functions are named without a schema")
    if name in AGGREGATES:
        if not aggregate:
            raise UnsafeExpression(f"calls the aggregate {name}: a column is computed from its "
                                   "own row")
    elif name not in SCALAR_FUNCTIONS:
        raise UnsafeExpression(f"calls {name}, which is not an allowed function")
    if node.get("filter") is not None or (node.get("order_bys") or {}).get("orders") \
            or node.get("export_state"):
        raise UnsafeExpression(f"calls {name} with FILTER, ORDER BY or EXPORT_STATE")
