//! [`super::verbatim_only`]: an excerpt the file does not have falls back to its line once.

use super::*;

#[test]
fn excerpts_of_one_line_fall_back_to_it_once() {
    // A one-line JSON document: every record is on L1, and renderings of it the file does not
    // have (a path we built) fall back to that line.
    let text = r#"{ "/usr/bin/a": { "pie":"no" }, "/usr/bin/b": { "pie":"yes" } }"#;
    let check = Verbatim::new(text, &[text.len()]);
    let items = vec![
        Item::line(Section::Evidence, 1, "/usr/bin/a.pie: \"no\"", 5.0),
        Item::line(Section::Evidence, 1, "/usr/bin/b.pie: \"yes\"", 4.0),
        Item::line(Section::Evidence, 1, "\"pie\":\"no\"", 3.0),
    ];
    let kept = verbatim_only(items, text, &check);
    let texts: Vec<&str> = kept.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(
        texts.iter().filter(|t| **t == text).count(),
        1,
        "the whole line once: {texts:?}"
    );
    assert!(texts.contains(&"\"pie\":\"no\""), "{texts:?}");
    assert_eq!(kept.len(), 2, "{texts:?}");
}
