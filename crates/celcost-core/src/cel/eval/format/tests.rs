//! Tests of cel-go's `format` (the `ext.Strings` string formatting), against the values cel-go
//! gives.

use super::*;
use crate::cel::decls::Version;
use crate::cel::eval::{GoError, Interpreter, Outcome};
use crate::cel::parse::ParserOptions;

/// `'<f>'.format([<args>])` through the interpreter (cel-go's `format`, not the crate's).
fn run(src: &str) -> Outcome {
    let i = Interpreter::new(ParserOptions::for_version(Version::new(1, 36)));
    let p = i.compile(src).expect("compiles");
    i.eval(&p, &[])
}

fn ok(src: &str) -> String {
    match run(src) {
        Outcome::Value(Val::String(s)) => s,
        other => panic!("{src}: {other:?}"),
    }
}

fn err(src: &str) -> String {
    match run(src) {
        Outcome::Error(e) => match &e.go {
            GoError::Worded(w) => w.clone(),
            other => panic!("{src}: {e}: {other:?}"),
        },
        other => panic!("{src}: {other:?}"),
    }
}

/// cel-go's `TestStringFormat` (ext/formatting_test.go, v0.26.0), the cases of the values the
/// interpreter holds, in the `en_US` locale the API server uses.
#[test]
fn cel_go_string_format_cases() {
    for (src, want) in [
        ("'no substitution'.format([])", "no substitution"),
        (
            "'str is %s and some more'.format(['filler'])",
            "str is filler and some more",
        ),
        ("'%% and also %%'.format([])", "% and also %"),
        ("'%%%s%%'.format(['text'])", "%text%"),
        (
            "'%s%%'.format(['percent on the right'])",
            "percent on the right%",
        ),
        (
            "'%%%s'.format(['percent on the left'])",
            "%percent on the left",
        ),
        (
            "'%d %d %d, %s %s %s, %d %d %d, %s %s %s'.format([1, 2, 3, 'A', 'B', 'C', 4, 5, 6, 'D', 'E', 'F'])",
            "1 2 3, A B C, 4 5 6, D E F",
        ),
        ("'%.3f'.format([1.2345])", "1.234"),
        (
            "'this is 5 in binary: %b'.format([5])",
            "this is 5 in binary: 101",
        ),
        (
            "'this is -5 in binary: %b'.format([-5])",
            "this is -5 in binary: -101",
        ),
        (
            "'unsigned 64 in binary: %b'.format([uint(64)])",
            "unsigned 64 in binary: 1000000",
        ),
        (
            "'bit set from bool: %b'.format([true])",
            "bit set from bool: 1",
        ),
        ("'%o'.format([11])", "13"),
        ("'%o'.format([-11])", "-13"),
        (
            "'this is an unsigned octal: %o'.format([uint(65535)])",
            "this is an unsigned octal: 177777",
        ),
        (
            "'%x is 30 in hexadecimal'.format([30])",
            "1e is 30 in hexadecimal",
        ),
        (
            "'%X is 20 in hexadecimal'.format([30])",
            "1E is 20 in hexadecimal",
        ),
        (
            "'%x is -30 in hexadecimal'.format([-30])",
            "-1e is -30 in hexadecimal",
        ),
        (
            "'%X is 6000 in hexadecimal'.format([uint(6000)])",
            "1770 is 6000 in hexadecimal",
        ),
        ("'%x'.format(['Hello world!'])", "48656c6c6f20776f726c6421"),
        ("'%X'.format(['Hello world!'])", "48656C6C6F20776F726C6421"),
        ("'%x'.format([b'byte string'])", "6279746520737472696e67"),
        (
            "'%x'.format([b'\\x00\\x00byte string\\x00'])",
            "00006279746520737472696e6700",
        ),
        ("'%X'.format([b'byte string'])", "6279746520737472696E67"),
        ("'%f'.format([2.71828])", "2.718280"),
        ("'%s'.format([2.71])", "2.71"),
        ("'%s'.format([[2.71]])", "[2.710000]"),
        ("'%s'.format([0.000000002])", "2e-09"),
        ("'%s'.format([[0.000000002]])", "[0.000000]"),
        ("'%f'.format(['NaN'])", "NaN"),
        ("'%f'.format(['Infinity'])", "∞"),
        ("'%f'.format(['-Infinity'])", "-∞"),
        ("'%s'.format([double('NaN')])", "NaN"),
        ("'%s'.format([double('Inf')])", "+Inf"),
        ("'%s'.format([double('-Inf')])", "-Inf"),
        (
            "'%s'.format([[double('NaN'), double('+Inf'), double('-Inf')]])",
            "[\"NaN\", \"+Inf\", \"-Inf\"]",
        ),
        ("'%d'.format([uint(64)])", "64"),
        ("'null: %s'.format([null])", "null: null"),
        ("'%s'.format([999999999999])", "999999999999"),
        ("'some bytes: %s'.format([b'xyz'])", "some bytes: xyz"),
        (
            "'%s'.format([['abc', 3.14, null, [9, 8, 7, 6]]])",
            "[\"abc\", 3.140000, null, [9, 8, 7, 6]]",
        ),
        (
            "'map with multiple key types: %s'.format([{1: 'value1', uint(2): 'value2', true: double('NaN')}])",
            "map with multiple key types: {1:\"value1\", 2:\"value2\", true:\"NaN\"}",
        ),
        (
            "'true bool: %s, false bool: %s'.format([true, false])",
            "true bool: true, false bool: false",
        ),
        (
            "'%s'.format([{'key1': b'xyz', 'key5': null, 'key4': true, 'key3': 2.71828}])",
            "{\"key1\":b\"xyz\", \"key3\":2.718280, \"key4\":true, \"key5\":null}",
        ),
    ] {
        assert_eq!(ok(src), want, "{src}");
    }
}

/// cel-go's error cases (`TestStringFormat`, runtime errors: the compile-time check is
/// `crate::cel::env`'s).
#[test]
fn cel_go_string_format_errors() {
    for (src, want) in [
        (
            "'%a'.format([1])",
            "could not parse formatting clause: unrecognized formatting clause \"a\"",
        ),
        ("'%d %d %d'.format([0, 1])", "index 2 out of range"),
        (
            "'string is %b'.format(['abc'])",
            "error during formatting: only integers and bools can be formatted as binary, was given string",
        ),
        (
            "'octal: %o'.format(['a string'])",
            "error during formatting: octal clause can only be used on integers, was given string",
        ),
        (
            "'double is %x'.format([0.5])",
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given double",
        ),
        (
            "'double is %E'.format([0.5])",
            "could not parse formatting clause: unrecognized formatting clause \"E\"",
        ),
        (
            "'null: %d'.format([null])",
            "error during formatting: decimal clause can only be used on integers, was given null_type",
        ),
        (
            "'null: %e'.format([null])",
            "error during formatting: scientific clause can only be used on doubles, was given null_type",
        ),
        (
            "'null: %f'.format([null])",
            "error during formatting: fixed-point clause can only be used on doubles, was given null_type",
        ),
        (
            "'null: %x'.format([null])",
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given null_type",
        ),
        (
            "'null: %X'.format([null])",
            "error during formatting: only integers, byte buffers, and strings can be formatted as hex, was given null_type",
        ),
        (
            "'null: %b'.format([null])",
            "error during formatting: only integers and bools can be formatted as binary, was given null_type",
        ),
        (
            "'null: %o'.format([null])",
            "error during formatting: octal clause can only be used on integers, was given null_type",
        ),
        ("'%s %s'.format(['abc'])", "index 1 out of range"),
        (
            "'int is %d'.format([5.2])",
            "error during formatting: decimal clause can only be used on integers, was given double",
        ),
        (
            "'double is %f'.format([true])",
            "error during formatting: fixed-point clause can only be used on doubles, was given bool",
        ),
        (
            "'double is %.34'.format([5.0])",
            "could not parse formatting clause: error while parsing precision: could not find end of precision specifier",
        ),
        // The argument is looked up before the end of the string is seen.
        ("'filler %'.format([])", "index 0 out of range"),
        ("'filler %'.format([1])", "unexpected end of string"),
        (
            "'%.f'.format([1.0])",
            "could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing \"\": invalid syntax",
        ),
        (
            "'%.99999999999999999999f'.format([1.0])",
            "could not parse formatting clause: error while parsing precision: error while converting precision to integer: strconv.Atoi: parsing \"99999999999999999999\": value out of range",
        ),
        // A byte of a UTF-8 sequence shows as the Latin-1 character of its value (Go's `%c`).
        (
            "'%é'.format([1])",
            "could not parse formatting clause: unrecognized formatting clause \"Ã\"",
        ),
    ] {
        assert_eq!(err(src), want, "{src}");
    }
}

/// What the API server (Kubernetes 1.36.2) showed for each message on a default
/// (`kubectl create --dry-run=server`): x/text's `%f` groups the integer part and rounds half
/// to even; `%.300f` shows 44 zeros (a `uint8` of 300).
#[test]
fn as_the_api_server_shows_them() {
    for (src, want) in [
        ("'%f'.format([1234.5])", "1,234.500000"),
        ("'%.2f'.format([1234567.125])", "1,234,567.12"),
        ("'%.0f'.format([2.5])", "2"),
        ("'%f'.format([-0.0000001])", "-0.000000"),
        ("'%s'.format([1e6])", "1e+06"),
        ("'%s'.format([-0.0])", "-0"),
        (
            "'%s'.format([[1.5, 'a\"b', b'xyz', null, true, {'b': 1, 'a': [2]}, -2.0, 7u]])",
            "[1.500000, \"a\\\"b\", b\"xyz\", null, true, {\"a\":[2], \"b\":1}, -2.000000, 7]",
        ),
        (
            "'%x|%X'.format(['h\u{e9}llo', b'\\x00\\xff'])",
            "68c3a96c6c6f|00FF",
        ),
        ("'%b %o %X %x'.format([-5, 8, 255, -255])", "-101 10 FF -ff"),
        (
            "'%s'.format([{1: 'x', 2u: 'y', true: 'z', 'k': 1.0/0.0}])",
            "{\"k\":\"+Inf\", 1:\"x\", 2:\"y\", true:\"z\"}",
        ),
        ("'%.3f'.format([0.0005])", "0.001"),
        (
            "'%f'.format([1e21])",
            "1,000,000,000,000,000,000,000.000000",
        ),
        ("'%.1f'.format([-1234567.25])", "-1,234,567.2"),
        ("'%f'.format([0.1+0.2])", "0.300000"),
        ("'%s %s'.format([1.0/0.0, 0.0/0.0])", "+Inf NaN"),
        (
            "'%s'.format([['tab\\there \u{a0} \u{2028} \u{e9}']])",
            "[\"tab\\there \\u00a0 \\u2028 \u{e9}\"]",
        ),
        ("'%.10f'.format([1.0/3.0])", "0.3333333333"),
        (
            "'%d %s'.format([-9223372036854775807 - 1, 18446744073709551615u])",
            "-9223372036854775808 18446744073709551615",
        ),
        ("'%s'.format([123456789.0])", "1.23456789e+08"),
        ("'%s'.format([0.00001])", "1e-05"),
        ("'%s'.format([100000.0])", "100000"),
        ("'%.0f'.format([999.5])", "1,000"),
        ("'%.0f'.format([1000.5])", "1,000"),
        ("'%f'.format([123456.0])", "123,456.000000"),
        (
            "'%.300f'.format([1.0])",
            "1.00000000000000000000000000000000000000000000",
        ),
    ] {
        assert_eq!(ok(src), want, "{src}");
    }
}

/// Not followed: `%e` (x/text's scientific notation), values the interpreter does not hold as
/// cel-go; bytes that are not UTF-8 under `%s` fail, in words celcost does not reproduce.
#[test]
fn what_is_not_followed() {
    for src in [
        "'%e'.format([1052.032911275])",
        "'%s'.format([optional.of(1)])",
        "'%s'.format([url('https://a/')])",
        "'%.2000f'.format([1.0])",
    ] {
        assert!(matches!(run(src), Outcome::Unsupported(_)), "{src}");
    }
    let Outcome::Error(e) = run("'%s'.format([b'\\xff'])") else {
        panic!()
    };
    assert_eq!(e.go, GoError::Unworded);
    // The scientific clause's type error is cel-go's all the same.
    assert_eq!(
        err("'%e'.format(['x'])"),
        "error during formatting: scientific clause can only be used on doubles, was given string"
    );
    assert_eq!(
        format("%s", &[Val::Other("x".into())]),
        Err(FormatError::NotFollowed)
    );
}

/// The interpreter's own `format` never runs: every `format` call is cel-go's, in a nested
/// call, through `compile` and `compile_expr` alike.
#[test]
fn every_format_call_is_cel_go_s() {
    assert_eq!(ok("'%s'.format(['%d'.format([1])])"), "1");
    let Outcome::Value(Val::Bool(true)) = run("[1, 2].map(x, '%b'.format([x])) == ['1', '10']")
    else {
        panic!()
    };
    let v = Val::List(vec![Val::Int(3)]);
    let i = Interpreter::new(ParserOptions::for_version(Version::new(1, 30)));
    let p = i
        .compile("self.all(i, x, '%d:%d'.format([i, x]) == '0:3')")
        .unwrap();
    assert_eq!(i.eval(&p, &[("self", &v)]), Outcome::Value(Val::Bool(true)));
}
