//! Unit tests of the library, function by function: each value or error as the upstream
//! function named in the test computes it (cel-go v0.26.0 unless a test says otherwise;
//! `k8s.io/apiserver` v0.36.2, `k8s.io/apimachinery` v0.36.2, `blang/semver` v4.0.0).

use super::*;

fn s(x: &str) -> Val {
    Val::String(x.into())
}

fn i(x: i64) -> Val {
    Val::Int(x)
}

fn l(items: &[&str]) -> Val {
    Val::List(items.iter().map(|x| s(x)).collect())
}

fn call26(f: &str, member: bool, args: &[Val]) -> Called {
    call(Lib::default(), f, member, args)
}

fn value(f: &str, member: bool, args: &[Val]) -> Val {
    match call26(f, member, args) {
        Ok(Ok(v)) => v,
        other => panic!("{f}{args:?}: {other:?}"),
    }
}

fn error(f: &str, member: bool, args: &[Val]) -> String {
    match call26(f, member, args) {
        Ok(Err(Failure(Some(m)))) => m,
        other => panic!("{f}{args:?}: {other:?}"),
    }
}

/// `ext/strings.go` `charAt`, `indexOf`/`indexOfOffset`, `lastIndexOf`/`lastIndexOfOffset`,
/// `substr`/`substrRange`: code points, `index out of range: <i>`; offsets past the end give -1
/// from v0.22 (an error before: Kubernetes 1.30, 1.31).
#[test]
fn strings_extension_indexes() {
    assert_eq!(value("charAt", true, &[s("é😀x"), i(1)]), s("😀"));
    assert_eq!(value("charAt", true, &[s("abc"), i(3)]), s(""));
    assert_eq!(
        error("charAt", true, &[s("abc"), i(4)]),
        "index out of range: 4"
    );
    assert_eq!(
        error("charAt", true, &[s("abc"), i(-1)]),
        "index out of range: -1"
    );
    assert_eq!(value("indexOf", true, &[s("abcb"), s("b")]), i(1));
    assert_eq!(value("indexOf", true, &[s("abcb"), s("b"), i(2)]), i(3));
    assert_eq!(value("indexOf", true, &[s("abc"), s(""), i(7)]), i(7));
    assert_eq!(value("indexOf", true, &[s("abc"), s("a"), i(20)]), i(-1));
    let v17 = Lib { cel_go: 17 };
    assert_eq!(
        call(v17, "indexOf", true, &[s("abc"), s("a"), i(20)]),
        Ok(Err(Failure::new("index out of range: 20")))
    );
    assert_eq!(
        error("indexOf", true, &[s("abc"), s("a"), i(-2)]),
        "index out of range: -2"
    );
    assert_eq!(value("lastIndexOf", true, &[s("abcb"), s("b")]), i(3));
    assert_eq!(value("lastIndexOf", true, &[s("abc"), s("")]), i(3));
    assert_eq!(value("lastIndexOf", true, &[s("abcb"), s("b"), i(2)]), i(1));
    // v0.26: a substring longer than the string is -1 at once; before, the offset -1 was
    // out of range.
    assert_eq!(value("lastIndexOf", true, &[s(""), s("a")]), i(-1));
    assert_eq!(
        call(Lib { cel_go: 23 }, "lastIndexOf", true, &[s(""), s("a")]),
        Ok(Err(Failure::new("index out of range: -1")))
    );
    assert_eq!(value("substring", true, &[s("é😀x"), i(1)]), s("😀x"));
    assert_eq!(value("substring", true, &[s("abc"), i(1), i(3)]), s("bc"));
    assert_eq!(
        error("substring", true, &[s("abc"), i(2), i(1)]),
        "invalid substring range. start: 2, end: 1"
    );
    assert_eq!(
        error("substring", true, &[s("abc"), i(1), i(4)]),
        "index out of range: 4"
    );
    assert_eq!(
        error("substring", true, &[s("abc"), i(4)]),
        "index out of range: 4"
    );
}

/// `replace` (`strings.Replace`), `split` (`strings.SplitN`), `join`, `trim`
/// (`strings.TrimSpace`), `lowerAscii`/`upperAscii` (ASCII only), `strings.quote`.
#[test]
fn strings_extension_texts() {
    assert_eq!(
        value("replace", true, &[s("aaa"), s("a"), s("b")]),
        s("bbb")
    );
    assert_eq!(
        value("replace", true, &[s("aaa"), s("a"), s("b"), i(2)]),
        s("bba")
    );
    assert_eq!(
        value("replace", true, &[s("ab"), s(""), s("-")]),
        s("-a-b-")
    );
    assert_eq!(
        value("replace", true, &[s("abc"), s(""), s("-"), i(2)]),
        s("-a-bc")
    );
    assert_eq!(
        value("replace", true, &[s("aaa"), s("a"), s("b"), i(0)]),
        s("aaa")
    );
    assert_eq!(
        value("split", true, &[s("a.b.c"), s(".")]),
        l(&["a", "b", "c"])
    );
    assert_eq!(
        value("split", true, &[s("a.b.c"), s("."), i(2)]),
        l(&["a", "b.c"])
    );
    assert_eq!(value("split", true, &[s("a.b"), s("."), i(0)]), l(&[]));
    assert_eq!(
        value("split", true, &[s("abc"), s("")]),
        l(&["a", "b", "c"])
    );
    assert_eq!(
        value("split", true, &[s("abc"), s(""), i(2)]),
        l(&["a", "bc"])
    );
    assert_eq!(value("split", true, &[s(""), s("")]), l(&[]));
    assert_eq!(value("split", true, &[s(""), s(",")]), l(&[""]));
    assert_eq!(value("join", true, &[l(&["a", "b"])]), s("ab"));
    assert_eq!(value("join", true, &[l(&["a", "b"]), s(", ")]), s("a, b"));
    assert_eq!(value("trim", true, &[s(" \t a b\u{a0}\n")]), s("a b"));
    assert_eq!(value("lowerAscii", true, &[s("ÀBc")]), s("Àbc"));
    assert_eq!(value("upperAscii", true, &[s("àbC")]), s("àBC"));
    assert_eq!(
        value("strings.quote", false, &[s("a\"b\\c\n\té")]),
        s("\"a\\\"b\\\\c\\n\\té\"")
    );
}

/// Conversions (`common/types` `ConvertToType`): durations as Go's `time.ParseDuration`,
/// timestamps as `time.Parse(time.RFC3339, …)` in years 1 to 9999, their strings.
#[test]
fn conversions_of_durations_and_timestamps() {
    let d = |x: &str| value("duration", false, &[s(x)]);
    assert_eq!(value("string", false, &[d("1h30m")]), s("5400s"));
    assert_eq!(value("string", false, &[d("1.5s")]), s("1.5s"));
    assert_eq!(value("string", false, &[d("-1ms")]), s("-0.001s"));
    assert_eq!(value("string", false, &[d("0")]), s("0s"));
    assert_eq!(value("int", false, &[d("1us")]), i(1000));
    assert_eq!(value("int", false, &[d("1µs")]), i(1000));
    assert_eq!(value("int", false, &[d("1.h")]), i(3_600_000_000_000));
    for bad in ["", "1", "1x", ".h", "9223372036854775808ns", "1h-1m"] {
        assert_eq!(
            error("duration", false, &[s(bad)]),
            "type conversion error from 'string' to 'google.protobuf.Duration'",
            "{bad}"
        );
    }
    assert_eq!(value("int", false, &[d(".5s")]), i(500_000_000));
    assert_eq!(
        value("int", false, &[d("-9223372036854775808ns")]),
        i(i64::MIN)
    );
    let t = |x: &str| value("timestamp", false, &[s(x)]);
    assert_eq!(
        value("string", false, &[t("2020-01-01T00:00:00Z")]),
        s("2020-01-01T00:00:00Z")
    );
    assert_eq!(
        value("string", false, &[t("2020-01-01T00:00:00.120+01:00")]),
        s("2020-01-01T00:00:00.12+01:00")
    );
    assert_eq!(value("int", false, &[t("1970-01-02T00:00:00Z")]), i(86_400));
    assert_eq!(
        value("int", false, &[t("2020-01-01T01:00:00+01:00")]),
        i(1_577_836_800)
    );
    for bad in [
        "2020-01-01",
        "2020-02-30T00:00:00Z",
        "2020-01-01T24:00:00Z",
        "2020-01-01T00:00:60Z",
        "2020-01-01t00:00:00Z",
        "2020-01-01T00:00:00",
        "2020-01-01T00:00:00+1:00",
    ] {
        assert_eq!(
            error("timestamp", false, &[s(bad)]),
            "type conversion error from 'string' to 'google.protobuf.Timestamp'",
            "{bad}"
        );
    }
    assert_eq!(
        error("timestamp", false, &[i(253_402_300_800)]),
        "timestamp overflow"
    );
    assert_eq!(
        value("string", false, &[value("timestamp", false, &[i(0)])]),
        s("1970-01-01T00:00:00Z")
    );
    assert_eq!(call26("duration", false, &[i(5)]), Err(NotFollowed));
}

/// Arithmetic of durations and timestamps (`common/types/overflow.go`) and their accessors
/// (`timestamp.go`: UTC by default, a `±HH:MM` zone; `duration.go`: whole units).
#[test]
fn time_arithmetic_and_accessors() {
    let d = |x: &str| value("duration", false, &[s(x)]);
    let t = |x: &str| value("timestamp", false, &[s(x)]);
    let sum = value("_+_", false, &[t("2020-12-31T23:30:00Z"), d("1h")]);
    assert_eq!(value("string", false, &[sum]), s("2021-01-01T00:30:00Z"));
    let diff = value(
        "_-_",
        false,
        &[t("2020-01-02T00:00:00Z"), t("2020-01-01T00:00:00Z")],
    );
    assert_eq!(value("string", false, &[diff]), s("86400s"));
    assert_eq!(
        error("_+_", false, &[t("9999-12-31T23:00:00Z"), d("2h")]),
        "timestamp overflow"
    );
    let big = value("duration", false, &[s("2562047h")]);
    assert_eq!(error("_+_", false, &[big.clone(), big]), "integer overflow");
    let ts = t("2020-03-01T12:34:56.789Z");
    for (f, want) in [
        ("getFullYear", 2020),
        ("getMonth", 2),
        ("getDayOfYear", 60),
        ("getDate", 1),
        ("getDayOfMonth", 0),
        ("getDayOfWeek", 0),
        ("getHours", 12),
        ("getMinutes", 34),
        ("getSeconds", 56),
        ("getMilliseconds", 789),
    ] {
        assert_eq!(value(f, true, std::slice::from_ref(&ts)), i(want), "{f}");
    }
    assert_eq!(value("getHours", true, &[ts.clone(), s("-02:30")]), i(10));
    assert_eq!(value("getDate", true, &[ts.clone(), s("-13:00")]), i(29));
    assert_eq!(
        call26("getHours", true, &[ts, s("Europe/Paris")]),
        Err(NotFollowed)
    );
    let dur = d("90m30.5s");
    assert_eq!(value("getHours", true, std::slice::from_ref(&dur)), i(1));
    assert_eq!(value("getMinutes", true, std::slice::from_ref(&dur)), i(90));
    assert_eq!(
        value("getSeconds", true, std::slice::from_ref(&dur)),
        i(5430)
    );
    assert_eq!(value("getMilliseconds", true, &[dur]), i(5_430_500));
}

/// Number conversions, where cel-go's `ConvertToType` fails.
#[test]
fn number_conversions() {
    assert_eq!(value("int", false, &[s("-12")]), i(-12));
    assert_eq!(value("int", false, &[s("+12")]), i(12));
    assert_eq!(
        error("int", false, &[s("1e3")]),
        "type conversion error from 'string' to 'int'"
    );
    assert_eq!(
        error("int", false, &[Val::Double(9.3e18)]),
        "integer overflow"
    );
    assert_eq!(value("int", false, &[Val::Double(-2.9)]), i(-2));
    assert_eq!(error("uint", false, &[i(-1)]), "unsigned integer overflow");
    assert_eq!(value("string", false, &[Val::Double(1e21)]), s("1e+21"));
    assert_eq!(
        value("bytes", false, &[s("é")]),
        Val::Bytes("é".as_bytes().to_vec())
    );
    assert_eq!(
        error("string", false, &[Val::Bytes(vec![0xff])]),
        "invalid UTF-8 in bytes, cannot convert to string"
    );
    assert_eq!(
        value("type", false, &[s("x")]),
        Val::Ext(Arc::new(Ext::Type("string".into())))
    );
    assert_eq!(call26("type", false, &[Val::Map(vec![])]), Err(NotFollowed));
}

/// `ext/sets.go`, `ext/lists.go` (version 3), the optional library's `first`/`last`, and the
/// Kubernetes lists library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`).
#[test]
fn lists_and_sets() {
    assert_eq!(
        value("sets.contains", false, &[l(&["a", "b"]), l(&["b"])]),
        Val::Bool(true)
    );
    assert_eq!(
        value("sets.contains", false, &[l(&[]), l(&[])]),
        Val::Bool(true)
    );
    assert_eq!(
        value(
            "sets.equivalent",
            false,
            &[l(&["a", "b", "a"]), l(&["b", "a"])]
        ),
        Val::Bool(true)
    );
    assert_eq!(
        value("sets.intersects", false, &[l(&["a"]), l(&[])]),
        Val::Bool(false)
    );
    let nums = Val::List(vec![i(3), i(1), i(2)]);
    assert_eq!(
        value("slice", true, &[nums.clone(), i(1), i(3)]),
        Val::List(vec![i(1), i(2)])
    );
    assert_eq!(
        error("slice", true, &[nums.clone(), i(2), i(1)]),
        "cannot slice(2, 1), start index must be less than or equal to end index"
    );
    assert_eq!(
        error("slice", true, &[nums.clone(), i(0), i(4)]),
        "cannot slice(0, 4), list is length 3"
    );
    assert_eq!(
        error("slice", true, &[nums.clone(), i(-1), i(1)]),
        "cannot slice(-1, 1), negative indexes not supported"
    );
    assert_eq!(
        value("sort", true, std::slice::from_ref(&nums)),
        Val::List(vec![i(1), i(2), i(3)])
    );
    assert_eq!(
        value("reverse", true, std::slice::from_ref(&nums)),
        Val::List(vec![i(2), i(1), i(3)])
    );
    assert_eq!(
        value(
            "distinct",
            true,
            &[Val::List(vec![i(1), Val::Uint(1), i(2)])]
        ),
        Val::List(vec![i(1), i(2)])
    );
    let nested = Val::List(vec![i(1), Val::List(vec![i(2), Val::List(vec![i(3)])])]);
    assert_eq!(
        value("flatten", true, std::slice::from_ref(&nested)),
        Val::List(vec![i(1), i(2), Val::List(vec![i(3)])])
    );
    assert_eq!(
        value("flatten", true, &[nested.clone(), i(2)]),
        Val::List(vec![i(1), i(2), i(3)])
    );
    assert_eq!(
        error("flatten", true, &[nested, i(-1)]),
        "level must be non-negative"
    );
    assert_eq!(
        value("lists.range", false, &[i(3)]),
        Val::List(vec![i(0), i(1), i(2)])
    );
    assert_eq!(
        value(
            "@sortByAssociatedKeys",
            true,
            &[l(&["x", "y"]), Val::List(vec![i(2), i(1)])]
        ),
        l(&["y", "x"])
    );
    assert_eq!(value("first", true, &[l(&[])]), Val::Optional(None));
    assert_eq!(
        value("last", true, &[l(&["a", "b"])]),
        Val::Optional(Some(Box::new(s("b"))))
    );
    assert_eq!(
        value("isSorted", true, &[l(&["a", "a", "b"])]),
        Val::Bool(true)
    );
    assert_eq!(
        value("isSorted", true, std::slice::from_ref(&nums)),
        Val::Bool(false)
    );
    assert_eq!(value("sum", true, std::slice::from_ref(&nums)), i(6));
    assert_eq!(
        error("sum", true, &[Val::List(vec![i(i64::MAX), i(1)])]),
        "integer overflow"
    );
    assert_eq!(value("min", true, std::slice::from_ref(&nums)), i(1));
    assert_eq!(value("max", true, std::slice::from_ref(&nums)), i(3));
    assert_eq!(error("max", true, &[l(&[])]), "max called on empty list");
    assert_eq!(value("indexOf", true, &[l(&["a", "b", "a"]), s("a")]), i(0));
    assert_eq!(
        value("lastIndexOf", true, &[l(&["a", "b", "a"]), s("a")]),
        i(2)
    );
    assert_eq!(
        value("includes", true, &[nums, Val::Double(2.0)]),
        Val::Bool(true)
    );
}

/// The optional library (`cel/library.go`) and `cel.@mapInsert` (`ext/comprehensions.go`).
#[test]
fn optionals_and_map_inserts() {
    let some = Val::Optional(Some(Box::new(i(1))));
    let none = Val::Optional(None);
    assert_eq!(value("or", true, &[none.clone(), some.clone()]), some);
    assert_eq!(value("or", true, &[some.clone(), none.clone()]), some);
    assert_eq!(value("orValue", true, &[none.clone(), i(7)]), i(7));
    assert_eq!(
        error("value", true, std::slice::from_ref(&none)),
        "optional.none() dereference"
    );
    assert_eq!(value("optional.ofNonZeroValue", false, &[s("")]), none);
    assert_eq!(
        value("optional.ofNonZeroValue", false, &[i(2)]),
        Val::Optional(Some(Box::new(i(2))))
    );
    assert_eq!(
        value("optional.unwrap", false, &[Val::List(vec![some, none])]),
        Val::List(vec![i(1)])
    );
    let m = Val::Map(vec![(s("a"), i(1))]);
    assert_eq!(
        value("cel.@mapInsert", false, &[m.clone(), s("b"), i(2)]),
        Val::Map(vec![(s("a"), i(1)), (s("b"), i(2))])
    );
    assert_eq!(
        error("cel.@mapInsert", false, &[m.clone(), s("a"), i(2)]),
        "insert failed: key a already exists"
    );
    assert_eq!(
        error("cel.@mapInsert", false, &[m.clone(), m]),
        "insert failed: key a already exists"
    );
}

/// `library/regex.go` `find`/`findAll` (Go's leftmost-first matches, `Illegal regex: …`).
#[test]
fn regex_library() {
    assert_eq!(value("find", true, &[s("ab12cd34"), s("[0-9]+")]), s("12"));
    assert_eq!(value("find", true, &[s("abc"), s("[0-9]+")]), s(""));
    assert_eq!(
        value("findAll", true, &[s("ab12cd34"), s("[0-9]+")]),
        l(&["12", "34"])
    );
    assert_eq!(
        value("findAll", true, &[s("ab12cd34"), s("[0-9]+"), i(1)]),
        l(&["12"])
    );
    assert_eq!(
        value("findAll", true, &[s("ab12cd34"), s("[0-9]+"), i(0)]),
        l(&[])
    );
    assert_eq!(
        error("find", true, &[s("x"), s("(")]),
        "Illegal regex: error parsing regexp: missing closing ): `(`"
    );
    assert_eq!(
        call26("findAll", true, &[s("ab"), s("x*")]),
        Err(NotFollowed)
    );
}

/// `resource.ParseQuantity` (apimachinery `quantity.go`) and the quantity library: exact
/// comparisons, `AsInt64` only of an `int64Amount` (a value parsed or added in `inf.Dec` is no
/// integer), `AsApproximateFloat64` from the representation.
#[test]
fn quantities() {
    let q = |x: &str| match Quantity::parse(x) {
        Ok(q) => q,
        Err(e) => panic!("{x}: {e}"),
    };
    assert_eq!(q("1.5k").cmp_value(&q("1500")), Ordering::Equal);
    assert_eq!(q("1Ki").cmp_value(&q("1024")), Ordering::Equal);
    assert_eq!(q("1Mi").cmp_value(&q("1M")), Ordering::Greater);
    assert_eq!(q("100m").cmp_value(&q("0.1")), Ordering::Equal);
    assert_eq!(q("1e3").cmp_value(&q("1k")), Ordering::Equal);
    assert_eq!(q("-1").sign(), -1);
    assert_eq!(q("0").sign(), 0);
    assert_eq!(q("000").sign(), 0);
    assert_eq!(q("10Mi").as_int64(), Some(10 * 1024 * 1024));
    assert_eq!(q("1.5").as_int64(), None);
    assert_eq!(q("1500m").as_int64(), None);
    assert_eq!(q("1.5Mi").as_int64(), None);
    assert_eq!(q("1.5k").as_int64(), Some(1500));
    assert_eq!(q("1.5k").as_approximate_float64(), 1500.0);
    assert_eq!(q("0.1n").cmp_value(&q("1n")), Ordering::Equal);
    assert_eq!(q("-0.1n").cmp_value(&q("-1n")), Ordering::Equal);
    assert_eq!(
        q("8Ei").cmp_value(&q("9223372036854775807")),
        Ordering::Equal
    );
    assert_eq!(q("1").add(&q("1m")).as_int64(), None);
    assert_eq!(q("1").add(&q("1k")).as_int64(), Some(1001));
    for bad in ["", "a", "1.2.3", "1x", "--1", "1e"] {
        assert!(Quantity::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(
        Quantity::parse("a").unwrap_err(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        Quantity::parse("1Qi").unwrap_err(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        Quantity::parse("1mi").unwrap_err(),
        "unable to parse quantity's suffix"
    );
    let v = |x: &str| value("quantity", false, &[s(x)]);
    assert_eq!(
        value("isLessThan", true, &[v("100m"), v("1")]),
        Val::Bool(true)
    );
    assert_eq!(value("compareTo", true, &[v("1Ki"), v("1k")]), i(1));
    assert_eq!(
        value("asInteger", true, &[value("add", true, &[v("1k"), i(5)])]),
        i(1005)
    );
    assert_eq!(
        error("asInteger", true, &[v("1.5")]),
        "cannot convert value to integer"
    );
    assert_eq!(value("isQuantity", false, &[s("1.2.3")]), Val::Bool(false));
}

/// `library/ip.go`, `library/cidr.go` over Go's `net/netip`.
#[test]
fn ips_and_cidrs() {
    let ip = |x: &str| value("ip", false, &[s(x)]);
    assert_eq!(value("family", true, &[ip("10.0.0.1")]), i(4));
    assert_eq!(value("family", true, &[ip("fd00::1")]), i(6));
    assert_eq!(
        value("isLoopback", true, &[ip("127.0.0.2")]),
        Val::Bool(true)
    );
    assert_eq!(
        value("isGlobalUnicast", true, &[ip("10.0.0.1")]),
        Val::Bool(true)
    );
    assert_eq!(
        value("isGlobalUnicast", true, &[ip("255.255.255.255")]),
        Val::Bool(false)
    );
    assert_eq!(
        value("isLinkLocalUnicast", true, &[ip("fe80::1")]),
        Val::Bool(true)
    );
    assert_eq!(
        value("isLinkLocalMulticast", true, &[ip("224.0.0.5")]),
        Val::Bool(true)
    );
    assert_eq!(
        value("string", false, &[ip("2001:DB8::1")]),
        s("2001:db8::1")
    );
    assert_eq!(
        value("ip.isCanonical", false, &[s("2001:DB8::1")]),
        Val::Bool(false)
    );
    assert_eq!(
        error("ip", false, &[s("a")]),
        "IP Address \"a\" parse error during conversion from string: ParseAddr(\"a\"): unable to parse IP"
    );
    assert_eq!(
        error("ip", false, &[s("::ffff:1.2.3.4")]),
        "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"
    );
    // Go's `netip.ParseAddr` errors (`parseIPv4`, `parseIPv6`), as the API server gave them.
    for (bad, why) in [
        ("1.2.3", "ParseAddr(\"1.2.3\"): IPv4 address too short"),
        (
            "1.2.3.256",
            "ParseAddr(\"1.2.3.256\"): IPv4 field has value >255",
        ),
        (
            "01.2.3.4",
            "ParseAddr(\"01.2.3.4\"): IPv4 field has octet with leading zero",
        ),
        (
            "1.2..3",
            "ParseAddr(\"1.2..3\"): IPv4 field must have at least one digit (at \".3\")",
        ),
        ("10Mi", "ParseAddr(\"10Mi\"): unable to parse IP"),
        (
            "1.2.3.a",
            "ParseAddr(\"1.2.3.a\"): unexpected character (at \"a\")",
        ),
        (
            "https://x/y?a=1",
            "ParseAddr(\"https://x/y?a=1\"): each colon-separated field must have at least one digit (at \"https://x/y?a=1\")",
        ),
        (
            "1::2::3",
            "ParseAddr(\"1::2::3\"): multiple :: in address (at \":3\")",
        ),
        ("1:2", "ParseAddr(\"1:2\"): address string too short"),
        ("%eth0", "ParseAddr(\"%eth0\"): missing IPv6 address"),
    ] {
        assert_eq!(
            error("ip", false, &[s(bad)]),
            format!("IP Address \"{bad}\" parse error during conversion from string: {why}"),
            "{bad}"
        );
    }
    assert_eq!(
        error("ip", false, &[s("fe80::1%eth0")]),
        "IP address \"fe80::1%eth0\" with zone value is not allowed"
    );
    assert_eq!(value("string", false, &[ip("::1.2.3.4")]), s("::102:304"));
    let cidr = |x: &str| value("cidr", false, &[s(x)]);
    let c = cidr("192.168.1.7/16");
    assert_eq!(value("prefixLength", true, std::slice::from_ref(&c)), i(16));
    assert_eq!(
        value(
            "string",
            false,
            &[value("masked", true, std::slice::from_ref(&c))]
        ),
        s("192.168.0.0/16")
    );
    assert_eq!(
        value("string", false, std::slice::from_ref(&c)),
        s("192.168.1.7/16")
    );
    assert_eq!(
        value("containsIP", true, &[c.clone(), s("192.168.200.1")]),
        Val::Bool(true)
    );
    assert_eq!(
        value("containsIP", true, &[c.clone(), ip("::1")]),
        Val::Bool(false)
    );
    assert_eq!(
        value("containsCIDR", true, &[c.clone(), s("192.168.3.0/24")]),
        Val::Bool(true)
    );
    assert_eq!(
        value("containsCIDR", true, &[c.clone(), s("192.0.0.0/8")]),
        Val::Bool(false)
    );
    assert_eq!(
        value("string", false, &[value("ip", true, &[c])]),
        s("192.168.1.7")
    );
    assert_eq!(
        error("cidr", false, &[s("a")]),
        "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"a\"): no '/'"
    );
    assert_eq!(
        error("cidr", false, &[s("1.2.3.4/33")]),
        "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3.4/33\"): prefix length out of range"
    );
    assert_eq!(
        value("isCIDR", false, &[s("10.0.0.0/08")]),
        Val::Bool(false)
    );
    assert_eq!(
        error("cidr", false, &[s("10.0.0.0/+8")]),
        "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0/+8\"): bad bits after slash: \"+8\""
    );
    assert_eq!(
        error("cidr", false, &[s("fe80::/64%x")]),
        "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"fe80::/64%x\"): bad bits after slash: \"64%x\""
    );
}

/// `library/semverlib.go` over `blang/semver/v4` `Parse` and its `normalizeAndParse`.
#[test]
fn semvers() {
    let v = |x: &str| value("semver", false, &[s(x)]);
    assert_eq!(value("major", true, &[v("1.2.3")]), i(1));
    assert_eq!(
        value("isLessThan", true, &[v("1.2.3-alpha"), v("1.2.3")]),
        Val::Bool(true)
    );
    assert_eq!(
        value(
            "compareTo",
            true,
            &[v("1.2.3-alpha.2"), v("1.2.3-alpha.10")]
        ),
        i(-1)
    );
    assert_eq!(
        value("compareTo", true, &[v("1.2.3+a"), v("1.2.3+b")]),
        i(0)
    );
    assert_eq!(
        error("semver", false, &[s("1.2")]),
        "No Major.Minor.Patch elements found"
    );
    assert_eq!(
        error("semver", false, &[s("01.2.3")]),
        "Major number must not contain leading zeroes \"01\""
    );
    assert_eq!(
        error("semver", false, &[s("a.2.3")]),
        "Invalid character(s) found in major number \"a\""
    );
    assert_eq!(error("semver", false, &[s("")]), "Version string empty");
    assert_eq!(
        error("semver", false, &[s("1..3")]),
        "strconv.ParseUint: parsing \"\": invalid syntax"
    );
    assert_eq!(
        value(
            "minor",
            true,
            &[value("semver", false, &[s("v1.02"), Val::Bool(true)])]
        ),
        i(2)
    );
    assert_eq!(
        value("isSemver", false, &[s("v1.2"), Val::Bool(true)]),
        Val::Bool(true)
    );
    assert_eq!(value("isSemver", false, &[s("v1.2")]), Val::Bool(false));
    assert_eq!(
        error("semver", false, &[s("1-rc"), Val::Bool(true)]),
        "short version cannot contain PreRelease/Build meta data"
    );
}

/// `library/format.go`: the named formats, apimachinery's name validations' messages.
#[test]
fn named_formats() {
    let f = |name: &str| value("format.named", false, &[s(name)]);
    assert_eq!(f("nope"), Val::Optional(None));
    let Val::Optional(Some(label)) = f("dns1123Label") else {
        panic!()
    };
    assert_eq!(
        value("validate", true, &[(*label).clone(), s("my-name")]),
        Val::Optional(None)
    );
    assert_eq!(
        value("validate", true, &[(*label).clone(), s("a.b")]),
        Val::Optional(Some(Box::new(l(&["must not contain dots"]))))
    );
    assert_eq!(
        value("validate", true, &[(*label).clone(), s("A")]),
        Val::Optional(Some(Box::new(l(&[
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ]))))
    );
    let prefix = value("format.dns1123LabelPrefix", false, &[]);
    assert_eq!(
        value("validate", true, &[prefix, s("abc-")]),
        Val::Optional(None)
    );
    let sub = value("format.dns1123Subdomain", false, &[]);
    let long = "a".repeat(254);
    let Val::Optional(Some(errs)) = value("validate", true, &[sub, s(&long)]) else {
        panic!()
    };
    assert_eq!(*errs, l(&["must be no more than 253 characters"]));
    let q = value("format.qualifiedName", false, &[]);
    assert_eq!(
        value("validate", true, &[q.clone(), s("example.com/My_name")]),
        Val::Optional(None)
    );
    assert_eq!(
        value("validate", true, &[q, s("/x")]),
        Val::Optional(Some(Box::new(l(&["prefix part must be non-empty"]))))
    );
    let lv = value("format.labelValue", false, &[]);
    assert_eq!(
        value("validate", true, &[lv.clone(), s("")]),
        Val::Optional(None)
    );
    assert_eq!(
        value("validate", true, &[lv, s("a b")]),
        Val::Optional(Some(Box::new(l(&[
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ]))))
    );
    let uuid = value("format.uuid", false, &[]);
    assert_eq!(call26("validate", true, &[uuid, s("x")]), Err(NotFollowed));
}
