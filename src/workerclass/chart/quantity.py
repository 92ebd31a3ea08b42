"""Go/sprig number semantics the chart's arithmetic runs on, and the chart's quantity helpers.

Owns: ``cozy-lib.resources.toFloat`` (:func:`to_float`), ``kubernetes.cpuToMillicores``
(:func:`cpu_to_millicores`), and the Go primitives they and ``nodegroup.yaml`` lean on: Go's
``%v`` of a float64 (:func:`go_str`, also sprig's ``toString``), Go's ``%q`` (:func:`go_quote_text`,
also sprig's ``quote``), sprig's ``nindent`` (:func:`nindent`), ``strconv.ParseFloat`` /
``ParseInt(s, 0, 0)`` as ``spf13/cast`` uses them (:func:`to_float64`, :func:`to_int`), and
sprig's decimal ``addf``/``subf``/``mulf``/``divf`` (shopspring/decimal: exact sums and products,
quotients rounded half away from zero at 16 decimal places).

Helm values are JSON-decoded, so every number in ``.Values`` is a float64: a Python ``int``
here stands for the float64 of the same value.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ..api.caching import short_cache

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

#: ``strconv.ParseFloat``'s decimal syntax (digits, an optional point and fraction, an optional
#: exponent). The digits before and after the point are one run when there is no point: written
#: ``[0-9]+\.?[0-9]*``, a run of N digits not followed by what fits split N ways (20,000 digits: 13 s).
_GO_FLOAT = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_GO_SPECIAL = re.compile(r"^[+-]?(?:inf|infinity|nan)$", re.IGNORECASE)
_GO_INT_BODY = re.compile(
    r"^(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|0(?:_?[0-7])*|[1-9](?:_?[0-9])*)$"
)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_PLAIN_QUOTABLE = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but " and \\: %q leaves it as it is


def go_quote_text(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``) of a string: sprig ``quote`` and the chart's ``%q``."""
    if _PLAIN_QUOTABLE.fullmatch(text):
        return f'"{text}"'
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def nindent(text: str, width: int) -> str:
    """sprig ``nindent``: a newline, then every line (empty ones too) indented by ``width``."""
    pad = " " * width
    return "\n" + pad + text.replace("\n", "\n" + pad)


def go_str(value: Any) -> str:
    """sprig ``toString`` / ``printf "%v"`` / ``{{ x }}`` of a values scalar."""
    if type(value) is str:
        return value
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return go_float_str(float(value))
    if isinstance(value, float):
        return go_float_str(value)
    if isinstance(value, str):
        return value
    return str(value)


def go_float_str(f: float) -> str:
    """fmt's ``%v`` of a float64: ``strconv.FormatFloat(f, 'g', -1, 64)``.

    Shortest round-trip digits; the exponent form when the decimal exponent is < -4 or >= 6
    (strconv takes 6 as the precision for that decision when printing the shortest digits):
    1000000 prints ``1e+06``, 123456 prints ``123456``, 0.0001 prints ``0.0001``.
    """
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    return _fmt_g(f)


@functools.lru_cache(maxsize=4096)
def _fmt_g(f: float) -> str:
    # Cached on the float: 0.0 and -0.0 are one key, so zero never reaches here (go_float_str).
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exp = Decimal(repr(f)).normalize().as_tuple()
    ds = "".join(str(d) for d in digits)
    assert isinstance(exp, int)
    nd = len(ds)
    dp = nd + exp  # decimal point position: value = 0.ds * 10^dp
    x = dp - 1  # scientific exponent
    neg = "-" if sign else ""
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        es = "-" if x < 0 else "+"
        ax = abs(x)
        return f"{neg}{mant}e{es}{ax:02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * (-dp)}{ds}"
    if dp >= nd:
        return f"{neg}{ds}{'0' * (dp - nd)}"
    return f"{neg}{ds[:dp]}.{ds[dp:]}"


def parse_float(s: str) -> float | None:
    """``strconv.ParseFloat(s, 64)``; None where Go returns an error (incl. out of range)."""
    if _GO_SPECIAL.match(s):
        low = s.lower().lstrip("+-")
        if low == "nan":
            return math.nan
        return -math.inf if s.startswith("-") else math.inf
    if _GO_FLOAT.match(s):
        v = float(s)
        if math.isinf(v):
            return None
        return v
    low = s.lower().lstrip("+-")
    if low.startswith("0x") and "p" in low:
        try:
            v = float.fromhex(s.replace("_", ""))
        except (ValueError, OverflowError):
            return None
        return None if math.isinf(v) else v
    return None


def parse_int(s: str) -> int | None:
    """``strconv.ParseInt(s, 0, 64)``; None on error (syntax or range)."""
    body = s
    sign = 1
    if body[:1] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if not body or not _GO_INT_BODY.match(body):
        return None
    b = body.replace("_", "")
    if "_" in body and not (len(b) > 1 and b[0] == "0"):
        return None  # underscores only with a base prefix
    if b[:2] in ("0x", "0X"):
        v = int(b[2:], 16)
    elif b[:2] in ("0o", "0O"):
        v = int(b[2:], 8)
    elif b[:2] in ("0b", "0B"):
        v = int(b[2:], 2)
    elif len(b) > 1 and b[0] == "0":
        v = int(b[1:], 8)
    else:
        v = int(b)
    v *= sign
    if not _INT64_MIN <= v <= _INT64_MAX:
        return None
    return v


def to_float64(value: Any) -> float:
    """sprig ``float64`` (``cast.ToFloat64``): strings through ParseFloat, failures are 0."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        v = parse_float(value)
        return 0.0 if v is None else v
    return 0.0


def float_to_int(f: float) -> int:
    """Go's ``int(f)`` on amd64 (truncation; out of range and NaN give the minimum int64)."""
    if math.isnan(f) or math.isinf(f):
        return _INT64_MIN
    v = math.trunc(f)
    if not _INT64_MIN <= v <= _INT64_MAX:
        return _INT64_MIN
    return v


def _trim_zero_decimal(s: str) -> str:
    """cast's trimZeroDecimal: "2.000" -> "2"."""
    found = False
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if c == ".":
            if found:
                return s[:i]
            return s
        if c != "0":
            return s
        found = True
    return s


def to_int(value: Any) -> int:
    """sprig ``int`` (``cast.ToInt``): floats truncate, strings through ParseInt base 0, else 0."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return float_to_int(value)
    if isinstance(value, str):
        v = parse_int(_trim_zero_decimal(value))
        return 0 if v is None else v
    return 0


def is_finite_quantity(value: Any) -> bool:
    """Whether the chart's arithmetic can take ``value`` (``inf``/``nan`` spellings make it panic)."""
    s = go_str(value)
    f = to_float(value)
    if s.endswith("m"):
        return math.isfinite(f) and math.isfinite(to_float64(s[:-1]))
    return math.isfinite(f)


# The decimals as (integer mantissa, power of ten), in int arithmetic: int true division is
# correctly rounded, so each result is the float of the exact decimal result (the Fraction
# reference in tests/chart/test_fast_paths.py is proven equal).

_POW10: tuple[int, ...] = tuple(10**k for k in range(40))
#: shopspring's Div rounds the quotient to 16 decimal places
_DIV_PLACES = 10**16
_TWO53 = float(1 << 53)


def _scaled(value: Any) -> tuple[int, int]:
    """The exact decimal the float64 of ``value`` prints as (shopspring's NewFromFloat), as
    ``(m, k)`` with the value ``m / 10**k``."""
    f = value if type(value) is float else to_float64(value)
    if -_TWO53 < f < _TWO53 and f == int(f):
        return int(f), 0  # an integer float below 2**53 prints as exactly its digits
    if f != f or f in (math.inf, -math.inf):
        # shopspring/decimal panics here, so the chart errors (checks.chart_failures reports the
        # non-finite quantity); the arithmetic stays total (0) instead of raising
        return 0, 0
    text = repr(f)
    if "e" in text:
        sign, digits, exponent = Decimal(text).as_tuple()
        assert isinstance(exponent, int)
        m = int("".join(map(str, digits))) * (-1 if sign else 1)
        if exponent >= 0:
            return m * _pow10(exponent), 0
        return m, -exponent
    whole, _, frac = text.partition(".")
    return int(whole + frac), len(frac)


def _pow10(k: int) -> int:
    return _POW10[k] if k < 40 else int(10**k)


def mulf(a: Any, b: Any) -> float:
    ma, ka = _scaled(a)
    mb, kb = _scaled(b)
    if ka + kb == 0:
        return float(ma * mb)
    return ma * mb / _pow10(ka + kb)


def _sum(a: Any, b: Any, sign: int) -> float:
    ma, ka = _scaled(a)
    mb, kb = _scaled(b)
    if ka == kb:
        m = ma + sign * mb
        return float(m) if ka == 0 else m / _pow10(ka)
    if ka < kb:
        return (ma * _pow10(kb - ka) + sign * mb) / _pow10(kb)
    return (ma + sign * mb * _pow10(ka - kb)) / _pow10(ka)


def addf(a: Any, b: Any) -> float:
    return _sum(a, b, 1)


def subf(a: Any, b: Any) -> float:
    return _sum(a, b, -1)


def divf(a: Any, b: Any) -> float:
    """shopspring ``Div``: the quotient rounded half away from zero to 16 decimal places."""
    mb, kb = _scaled(b)
    if mb == 0:
        return 0.0  # decimal panics on division by zero (the chart errors; checks reports it)
    ma, ka = _scaled(a)
    # q = (ma / 10**ka) / (mb / 10**kb); scaled = q * 10**16 = num / den
    num = ma * _pow10(kb + 16)
    den = mb * _pow10(ka)
    negative = (num < 0) != (den < 0)
    n, r = divmod(abs(num), abs(den))
    if 2 * r >= abs(den):
        n += 1
    if negative:
        n = -n
    return n / _DIV_PLACES


# Sorted as Go ranges a map: the last suffix that matches wins (no two can both match).
_UNITS: tuple[tuple[str, float], ...] = tuple(
    sorted(
        {
            "Ki": 2.0**10,
            "Mi": 2.0**20,
            "Gi": 2.0**30,
            "Ti": 2.0**40,
            "Pi": 2.0**50,
            "Ei": 2.0**60,
            "n": 1e-9,
            "u": 1e-6,
            "m": 1e-3,
            "k": 1e3,
            "M": 1e6,
            "G": 1e9,
            "T": 1e12,
            "P": 1e15,
            "E": 1e18,
        }.items()
    )
)


def to_float(value: Any) -> float:
    """``cozy-lib.resources.toFloat``: a quantity (string or number) as a float64.

    The template returns ``mulf ... | toString`` and every caller pipes that to ``float64``;
    this returns the float after that round trip (``%v`` is the shortest exact form, so the
    round trip is the identity, except that an unparsable suffix-less remainder is 0).
    """
    if type(value) is str:
        return _to_float_str(value)
    return _to_float(value)


@short_cache(maxsize=4096)
def _to_float_str(value: str) -> float:
    return _to_float(value)


def _to_float(value: Any) -> float:
    raw: Any = value
    unit = 1.0
    if isinstance(value, str):
        for suffix, mult in _UNITS:
            if value.endswith(suffix):
                raw = value[: -len(suffix)]
                unit = mult
    f = to_float64(raw)
    if math.isnan(f) or math.isinf(f):
        return f  # decimal would panic; the chart cannot render such a value (see is_finite_quantity)
    return mulf(f, unit)


def cpu_to_millicores(value: Any) -> str:
    """``kubernetes.cpuToMillicores``: "100m" -> "100", "0.5" -> "500", "4" -> "4000"."""
    if type(value) is str:
        return _cpu_to_millicores_str(value)
    return _cpu_to_millicores_str(go_str(value))


@short_cache(maxsize=4096)
def _cpu_to_millicores_str(s: str) -> str:
    if s.endswith("m"):
        return s[:-1]
    f = to_float64(s)
    if math.isnan(f) or math.isinf(f):
        return str(_INT64_MIN)
    return str(float_to_int(mulf(f, 1000.0)))


def truthy(value: Any) -> bool:
    """Go template truth: false, 0, nil, "" and empty maps/lists are false."""
    if value is None:
        return False
    t = type(value)
    if t is str or t is dict or t is list:
        return len(value) > 0
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (str, list, tuple, dict)):
        return len(value) > 0
    if isinstance(value, Mapping):
        return len(value) > 0
    return True
