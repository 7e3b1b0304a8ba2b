//! Unit tests of the pieces below the public API: lexing of literals and positions.

use crate::lexer::{Tok, lex};
use crate::line_col;

fn toks(src: &str) -> Vec<Tok> {
    lex(src)
        .map(|t| t.into_iter().map(|t| t.tok).collect())
        .unwrap_or_default()
}

#[test]
fn lexes_numbers() {
    assert_eq!(
        toks("0x1F 7u 1.5 1e3 .5"),
        vec![
            Tok::Int(31),
            Tok::Uint(7),
            Tok::Double(1.5),
            Tok::Double(1000.0),
            Tok::Double(0.5),
            Tok::Eof
        ]
    );
}

#[test]
fn lexes_strings() {
    assert_eq!(
        toks(r#"'a\n' "b\x41" r'\n' b'\xff' '''x'y'''"#),
        vec![
            Tok::Str("a\n".into()),
            Tok::Str("bA".into()),
            Tok::Str("\\n".into()),
            Tok::Bytes(vec![0xff]),
            Tok::Str("x'y".into()),
            Tok::Eof
        ]
    );
}

#[test]
fn positions_are_line_and_column_in_characters() {
    assert_eq!(line_col("ab\ncé d", 7), (2, 4));
    assert_eq!(line_col("foo.", 4), (1, 5));
}
