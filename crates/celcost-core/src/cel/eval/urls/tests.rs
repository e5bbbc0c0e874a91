//! Tests of the Kubernetes URL library over Go's `net/url`: the accessors' values and errors.

use super::*;

/// What the accessors give, or the error (`UNWORDED` for an error whose text differs between
/// the Go versions).
fn describe(s: &str) -> Result<String, NotFollowed> {
    Ok(match url(s)? {
        Err(e) => e.unwrap_or_else(|| "UNWORDED".into()),
        Ok(u) => {
            let mut q = u.query()?;
            q.sort();
            let q: Vec<String> = q.into_iter().map(|(k, v)| format!("{k}={v:?}")).collect();
            format!(
                "scheme={} host={} hostname={} port={} path={} query={}",
                u.scheme(),
                u.host()?,
                u.hostname()?,
                u.port()?,
                u.escaped_path()?,
                q.join("&")
            )
        }
    })
}

/// Inputs of Go's `net/url` tests (`parseRequestURLTests`, `urltests`, `parseTests`), of
/// Kubernetes' (`apiextensions-apiserver` `schema/cel/validation_test.go` "URL parsing",
/// `apiserver` `library/cost_test.go`) and others for each branch, with what a Go program
/// printed for `url(s)` as `library/urls.go` makes it (`ParseRequestURI`, then `Parse`): the
/// error text, or the accessors; and whether `ParseRequestURI` alone (`isURL`) succeeds. Go 1.22.10 and 1.26.6 printed the same for each.
#[test]
fn as_go_net_url_parses_them() {
    for (input, request_uri, want) in [
        (
            "a",
            false,
            "URL parse error during conversion from string: parse \"a\": invalid URI for request",
        ),
        (
            "",
            false,
            "URL parse error during conversion from string: parse \"\": empty url",
        ),
        ("*", true, "scheme= host= hostname= port= path=* query="),
        ("/", true, "scheme= host= hostname= port= path=/ query="),
        ("//", true, "scheme= host= hostname= port= path= query="),
        ("///", true, "scheme= host= hostname= port= path=/// query="),
        (
            "http:",
            true,
            "scheme=http host= hostname= port= path= query=",
        ),
        (
            "http:/",
            true,
            "scheme=http host= hostname= port= path=/ query=",
        ),
        (
            "http://",
            true,
            "scheme=http host= hostname= port= path= query=",
        ),
        (
            "mailto:x@y",
            true,
            "scheme=mailto host= hostname= port= path= query=",
        ),
        (
            "http://h?",
            true,
            "scheme=http host=h hostname=h port= path= query=",
        ),
        (
            "http://h/p?a=1&b=2&a=3",
            true,
            "scheme=http host=h hostname=h port= path=/p query=a=[\"1\", \"3\"]&b=[\"2\"]",
        ),
        (
            "http://h/p?a=1;b=2&c=3",
            true,
            "scheme=http host=h hostname=h port= path=/p query=c=[\"3\"]",
        ),
        (
            "http://h/p?%zz=1&b=%41&c",
            true,
            "scheme=http host=h hostname=h port= path=/p query=b=[\"A\"]&c=[\"\"]",
        ),
        (
            "http://h/p?a+b=c+d&=e&f=",
            true,
            "scheme=http host=h hostname=h port= path=/p query==[\"e\"]&a b=[\"c d\"]&f=[\"\"]",
        ),
        (
            "http://h/p#frag%zz",
            false,
            "URL parse error during conversion from string: parse \"http://h/p#frag%zz\": invalid URL escape \"%zz\"",
        ),
        (
            "http://h/p?q#%zz",
            true,
            "URL parse error during conversion from string: parse \"http://h/p?q#%zz\": invalid URL escape \"%zz\"",
        ),
        (
            "http://u:p@h:8080/p",
            true,
            "scheme=http host=h:8080 hostname=h port=8080 path=/p query=",
        ),
        (
            "http://u@p@h/p",
            true,
            "scheme=http host=h hostname=h port= path=/p query=",
        ),
        (
            "http://u%zz@h/p",
            false,
            "URL parse error during conversion from string: parse \"http://u%zz@h/p\": invalid URL escape \"%zz\"",
        ),
        (
            "http://h:80x/",
            false,
            "URL parse error during conversion from string: parse \"http://h:80x/\": invalid port \":80x\" after host",
        ),
        (
            "http://h:/",
            true,
            "scheme=http host=h: hostname=h port= path=/ query=",
        ),
        (
            "http://h%41/",
            false,
            "URL parse error during conversion from string: parse \"http://h%41/\": invalid URL escape \"%41\"",
        ),
        (
            "http://h%c3%a9/",
            true,
            "scheme=http host=hé hostname=hé port= path=/ query=",
        ),
        (
            "http://h%25/",
            true,
            "scheme=http host=h% hostname=h% port= path=/ query=",
        ),
        (
            "http://h /",
            false,
            "URL parse error during conversion from string: parse \"http://h /\": invalid character \" \" in host name",
        ),
        (
            "http://h<>/",
            true,
            "scheme=http host=h<> hostname=h<> port= path=/ query=",
        ),
        (
            "http://h{}/",
            false,
            "URL parse error during conversion from string: parse \"http://h{}/\": invalid character \"{\" in host name",
        ),
        (
            "http://h/%2Fa%2fb",
            true,
            "scheme=http host=h hostname=h port= path=/%2Fa%2fb query=",
        ),
        (
            "http://h/a b",
            true,
            "scheme=http host=h hostname=h port= path=/a%20b query=",
        ),
        (
            "http://h/a%20b",
            true,
            "scheme=http host=h hostname=h port= path=/a%20b query=",
        ),
        (
            "http://h/é",
            true,
            "scheme=http host=h hostname=h port= path=/%C3%A9 query=",
        ),
        (
            "http://h/%C3%A9",
            true,
            "scheme=http host=h hostname=h port= path=/%C3%A9 query=",
        ),
        (
            "http://h/a;b,c",
            true,
            "scheme=http host=h hostname=h port= path=/a;b,c query=",
        ),
        (
            "HTTP://H/P",
            true,
            "scheme=http host=H hostname=H port= path=/P query=",
        ),
        (
            "h+t.t-p://x/",
            true,
            "scheme=h+t.t-p host=x hostname=x port= path=/ query=",
        ),
        (
            "1http://x/",
            false,
            "URL parse error during conversion from string: parse \"1http://x/\": invalid URI for request",
        ),
        (
            ":x",
            false,
            "URL parse error during conversion from string: parse \":x\": missing protocol scheme",
        ),
        ("x:", true, "scheme=x host= hostname= port= path= query="),
        (
            "/a:b",
            true,
            "scheme= host= hostname= port= path=/a:b query=",
        ),
        ("a:b", true, "scheme=a host= hostname= port= path= query="),
        (
            "//h/p",
            true,
            "scheme= host=h hostname=h port= path=/p query=",
        ),
        (
            "///p",
            true,
            "scheme= host= hostname= port= path=///p query=",
        ),
        (
            "/%zz",
            false,
            "URL parse error during conversion from string: parse \"/%zz\": invalid URL escape \"%zz\"",
        ),
        (
            "/%2",
            false,
            "URL parse error during conversion from string: parse \"/%2\": invalid URL escape \"%2\"",
        ),
        (
            "/%",
            false,
            "URL parse error during conversion from string: parse \"/%\": invalid URL escape \"%\"",
        ),
        (
            "http://h/p?&&&",
            true,
            "scheme=http host=h hostname=h port= path=/p query=",
        ),
        (
            "http://h/p?==",
            true,
            "scheme=http host=h hostname=h port= path=/p query==[\"=\"]",
        ),
        (
            "https://kubernetes.io/docs/?x=y#z",
            true,
            "scheme=https host=kubernetes.io hostname=kubernetes.io port= path=/docs/ query=x=[\"y\"]",
        ),
        (
            "https://user:pass@example.com:443/a/b?c=d&e",
            true,
            "scheme=https host=example.com:443 hostname=example.com port=443 path=/a/b query=c=[\"d\"]&e=[\"\"]",
        ),
        (
            "http://h/~!$&'()*+,;=:@[]",
            true,
            "scheme=http host=h hostname=h port= path=/~!$&'()*+,;=:@[] query=",
        ),
        (
            "http://h\u{7f}/",
            false,
            "URL parse error during conversion from string: parse \"http://h\\x7f/\": net/url: invalid control character in URL",
        ),
        (
            "http://h/\u{1}",
            false,
            "URL parse error during conversion from string: parse \"http://h/\\x01\": net/url: invalid control character in URL",
        ),
        (
            "http://h/p?a=b#c#d",
            true,
            "scheme=http host=h hostname=h port= path=/p query=a=[\"b\"]",
        ),
        (
            "http://h/p#",
            true,
            "scheme=http host=h hostname=h port= path=/p query=",
        ),
        (
            "http://h/p??",
            true,
            "scheme=http host=h hostname=h port= path=/p query=?=[\"\"]",
        ),
        (
            "http://h/p?a?b",
            true,
            "scheme=http host=h hostname=h port= path=/p query=a?b=[\"\"]",
        ),
        (
            "http://%41:%42@h/",
            true,
            "scheme=http host=h hostname=h port= path=/ query=",
        ),
        (
            "http://@h/",
            true,
            "scheme=http host=h hostname=h port= path=/ query=",
        ),
        (
            "http://h:65536/",
            true,
            "scheme=http host=h:65536 hostname=h port=65536 path=/ query=",
        ),
        (
            "http://-h_/",
            true,
            "scheme=http host=-h_ hostname=-h_ port= path=/ query=",
        ),
        (
            "https:://kubernetes.io/",
            true,
            "scheme=https host= hostname= port= path= query=",
        ),
        (
            "http://x.b",
            true,
            "scheme=http host=x.b hostname=x.b port= path= query=",
        ),
        (
            "http://h/%7e%7E",
            true,
            "scheme=http host=h hostname=h port= path=/%7e%7E query=",
        ),
        (
            "http://h/a%5Bb",
            true,
            "scheme=http host=h hostname=h port= path=/a%5Bb query=",
        ),
        (
            "http://h/a%25b",
            true,
            "scheme=http host=h hostname=h port= path=/a%25b query=",
        ),
        (
            "/a?b=%",
            true,
            "scheme= host= hostname= port= path=/a query=",
        ),
        (
            "http://h/%e2%82",
            true,
            "scheme=http host=h hostname=h port= path=/%e2%82 query=",
        ),
        (
            "http://%e2%82%ac/",
            true,
            "scheme=http host=€ hostname=€ port= path=/ query=",
        ),
        (
            "%",
            false,
            "URL parse error during conversion from string: parse \"%\": invalid URI for request",
        ),
        (
            "http://h/p?a%3Db=c",
            true,
            "scheme=http host=h hostname=h port= path=/p query=a=b=[\"c\"]",
        ),
        (
            "http://h/p?a=b=c",
            true,
            "scheme=http host=h hostname=h port= path=/p query=a=[\"b=c\"]",
        ),
        (
            "http://user:p:w@h/",
            true,
            "scheme=http host=h hostname=h port= path=/ query=",
        ),
        (
            "http://h/?%2B+%20=%26",
            true,
            "scheme=http host=h hostname=h port= path=/ query=+  =[\"&\"]",
        ),
        (
            "http://h/a\\b",
            true,
            "scheme=http host=h hostname=h port= path=/a%5Cb query=",
        ),
        (
            "http://h/%00",
            true,
            "scheme=http host=h hostname=h port= path=/%00 query=",
        ),
        (
            "foo.html",
            false,
            "URL parse error during conversion from string: parse \"foo.html\": invalid URI for request",
        ),
        (
            "../dir/",
            false,
            "URL parse error during conversion from string: parse \"../dir/\": invalid URI for request",
        ),
        (
            " http://foo.com",
            false,
            "URL parse error during conversion from string: parse \" http://foo.com\": invalid URI for request",
        ),
        (
            "http://192.168.0.%31/",
            false,
            "URL parse error during conversion from string: parse \"http://192.168.0.%31/\": invalid URL escape \"%31\"",
        ),
        (
            "//not.a.user@%66%6f%6f.com/just/a/path/also",
            true,
            "URL parse error during conversion from string: parse \"//not.a.user@%66%6f%6f.com/just/a/path/also\": invalid URL escape \"%66\"",
        ),
        (
            "http://foo.com/path",
            true,
            "scheme=http host=foo.com hostname=foo.com port= path=/path query=",
        ),
        (
            "https://[::1]:80/",
            true,
            "scheme=https host=[::1]:80 hostname=::1 port=80 path=/ query=",
        ),
        (
            "https://[::1]/",
            true,
            "scheme=https host=[::1] hostname=::1 port= path=/ query=",
        ),
        (
            "https://127.0.0.1/",
            true,
            "scheme=https host=127.0.0.1 hostname=127.0.0.1 port= path=/ query=",
        ),
        (
            "https://example.com/with space/",
            true,
            "scheme=https host=example.com hostname=example.com port= path=/with%20space/ query=",
        ),
        (
            "https://example.com/path?key with spaces=value with spaces",
            true,
            "scheme=https host=example.com hostname=example.com port= path=/path query=key with spaces=[\"value with spaces\"]",
        ),
        (
            "https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor",
            true,
            "scheme=https host=kubernetes.io:80 hostname=kubernetes.io port=80 path=/docs/home query=k1=[\"a\"]&k2=[\"b\", \"c\"]",
        ),
        (
            "/path",
            true,
            "scheme= host= hostname= port= path=/path query=",
        ),
        (
            "../relative-path",
            false,
            "URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request",
        ),
        (
            "https://user:pass@example.com:80/path?query=val#fragment",
            true,
            "scheme=https host=example.com:80 hostname=example.com port=80 path=/path query=query=[\"val\"]",
        ),
        (
            "http://[::ffff:1.2.3.4]:8080/x",
            true,
            "scheme=http host=[::ffff:1.2.3.4]:8080 hostname=::ffff:1.2.3.4 port=8080 path=/x query=",
        ),
        (
            "http://[::1]:/",
            true,
            "scheme=http host=[::1]: hostname=::1 port= path=/ query=",
        ),
    ] {
        assert_eq!(describe(input).as_deref(), Ok(want), "{input:?}");
        // `isURL` is `ParseRequestURI` alone (`url` also fails where `Parse` does).
        assert_eq!(is_url(input), Ok(request_uri), "{input:?}");
    }
}

/// Where Go 1.22 and 1.26 differ, or where a Go string would not be UTF-8, nothing is
/// guessed; where both fail in other words, `url` fails with no text and `isURL` is false.
#[test]
fn what_go_versions_parse_differently_is_not_followed() {
    for input in [
        // Hosts with several colons (Go 1.26: strict colons for http and https).
        "http://a:1:2/",
        "https://example.com:80:",
        "postgres://host1:1,host2:2,host3:3",
        // IP literals Go 1.26 rejects (an IPv4 address, a bad one) or with a zone.
        "http://[1.2.3.4]/",
        "http://[::1]]/",
        "http://[fe80::1%25en0]/",
        "http://example.com[::1",
    ] {
        assert_eq!(url(input), Err(NotFollowed), "{input}");
        assert_eq!(is_url(input), Err(NotFollowed), "{input}");
    }
    // Go 1.22: `invalid port ":c" after host`; Go 1.26: `invalid port ":b:c" after host`.
    assert_eq!(url("https://a:b:c/"), Ok(Err(None)));
    assert_eq!(is_url("https://a:b:c/"), Ok(false));
    // Unescaped to bytes that are no UTF-8.
    for input in ["http://h/?a=%ff", "http://h?%e2%82=1", "http://h%ff%fe/"] {
        let u = url(input).unwrap().unwrap();
        assert!(u.query().is_err() || u.host().is_err(), "{input}");
    }
    // Over 10,000 parameters: Go 1.26 parses none.
    let many = format!("http://h/?{}", "a=1&".repeat(10_000));
    assert_eq!(url(&many).unwrap().unwrap().query(), Err(NotFollowed));
    let enough = format!("http://h/?{}", "a=1&".repeat(9_999));
    assert_eq!(
        url(&enough).unwrap().unwrap().query().unwrap()[0].1.len(),
        9_999
    );
}
