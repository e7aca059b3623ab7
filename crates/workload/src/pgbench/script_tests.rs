//! The script parser's own tests.
use super::*;

fn kinds(text: &str) -> Vec<Kind> {
    parse("t.sql", "t.sql", text, 1)
        .unwrap()
        .commands
        .into_iter()
        .map(|c| c.kind)
        .collect()
}

#[test]
fn sql_ends_at_semicolons_outside_quotes_and_parentheses() {
    let k =
        kinds("SELECT ';' ,\n  (1;2);\n-- note\nSELECT $x$;$x$; SELECT 1 \\; SELECT 2;\nSELECT 3");
    let texts: Vec<String> = k
        .iter()
        .map(|k| match k {
            Kind::Sql(s) => s.text.clone(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "SELECT ';' ,\n  (1;2);",
            "SELECT $x$;$x$;",
            "SELECT 1 ; SELECT 2;",
            "SELECT 3"
        ]
    );
}

#[test]
fn meta_commands_and_if_blocks() {
    let k = kinds(
        "\\set x random(1, 10)\n\\if :x > 5\nSELECT 1 \\gset p_\n\\elif :x > 2\nSELECT 2;\n\\else\n\\sleep 1 ms\n\\endif\n",
    );
    assert!(matches!(&k[0], Kind::Set(v, _) if v == "x"));
    assert!(matches!(&k[1], Kind::If(_, 3)));
    assert!(matches!(&k[2], Kind::Sql(s) if s.gset == Some((Gset::One, "p_".into()))));
    assert!(matches!(&k[3], Kind::Elif(_, 5, 7)));
    assert!(matches!(&k[5], Kind::Else(7)));
    assert!(matches!(&k[6], Kind::Sleep(Arg::Text(t), 1000) if t == "1"));
    assert!(matches!(&k[7], Kind::Endif));
    // A unit in the number's word, as pgbench reads it.
    let k = kinds("\\sleep 2ms\n\\sleep -3US\n");
    assert!(matches!(&k[0], Kind::Sleep(Arg::Text(t), 1000) if t == "2"));
    assert!(matches!(&k[1], Kind::Sleep(Arg::Text(t), 1) if t == "-3"));
    assert!(parse("t.sql", "t.sql", "\\sleep 2ms s\n", 1).is_err());
    assert!(parse("t.sql", "t.sql", "\\sleep ms\n", 1).is_err());
}

#[test]
fn errors_name_the_file_and_line() {
    let e = parse("t.sql", "t.sql", "SELECT 1;\n\\set x 1 +\n", 1).unwrap_err();
    assert_eq!(e.line, 2);
    assert_eq!(e.message, "syntax error");
    let e = parse("t.sql", "t.sql", "\\frob\n", 1).unwrap_err();
    assert_eq!(e.message, "invalid command");
    let e = parse("t.sql", "t.sql", "\\if 1\nSELECT 1;\n", 1).unwrap_err();
    assert!(e.message.contains("\\endif"), "{e}");
    let e = parse("t.sql", "t.sql", "\\gset\n", 1).unwrap_err();
    assert!(e.message.contains("must follow"), "{e}");
}
