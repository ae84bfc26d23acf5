//! The object a question names by its key (issue 17, mechanism 5): one resource among 521 in a
//! provider schema (`"aws_instance": {...}`), one endpoint of an OpenAPI spec (`/pets/{id}:`),
//! one service of a compose file. A word of the question that the output writes as a key a few
//! times at most is shown from that key on, as the file writes it (whitespace collapsed), so the
//! object's first members come with their structure.

use super::{Cand, Channel};
use crate::guard::reduce::rank::Query;
use crate::guard::reduce::{clip_str, Item, Section, CUT_MARK};

/// Most times a key may occur for it to name one object (a key on every record names none).
const MAX_OCCURRENCES: usize = 3;
/// Bytes of the file shown from the key on (before whitespace is collapsed).
const EXCERPT_BYTES: usize = 480;
/// Shortest question word tried as a key.
const MIN_NAME: usize = 4;

/// Candidates of [`Channel::Relevance`], one per occurrence of a question word written as a
/// key (`"word":` in JSON, `word:` opening a YAML line), when it occurs at most
/// [`MAX_OCCURRENCES`] times. Each shows [`EXCERPT_BYTES`] of the file from the key, its
/// whitespace runs collapsed to one space, cut between members and before a quote it would leave
/// open, and marked [`CUT_MARK`] where cut; anchored at the key's line.
pub fn named_keys(text: &str, q: &Query) -> Vec<Cand> {
    let mut out = Vec::new();
    let names: Vec<&String> = q.names.iter().filter(|n| n.len() >= MIN_NAME).collect();
    if names.is_empty() {
        return out;
    }
    // One ASCII-lowered copy for every name's case-insensitive search (none when the text has
    // no capitals).
    let bytes = text.as_bytes();
    let hay: std::borrow::Cow<[u8]> = if bytes.iter().any(u8::is_ascii_uppercase) {
        std::borrow::Cow::Owned(bytes.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(bytes)
    };
    for name in names {
        let hits = key_offsets(text, &hay, name);
        if hits.is_empty() || hits.len() > MAX_OCCURRENCES {
            continue;
        }
        for off in hits {
            let raw = clip_str(&text[off..], EXCERPT_BYTES);
            let shown = excerpt(raw, raw.len() < text.len() - off);
            if shown.len() <= name.len() + 8 {
                continue;
            }
            let line = text[..off].bytes().filter(|&b| b == b'\n').count() + 1;
            out.push(Cand {
                item: Item::line(Section::Evidence, line, shown, NAMED_SCORE),
                channel: Channel::Relevance,
                score: NAMED_SCORE,
                group: None,
                rel: 1.0,
            });
        }
    }
    out
}

/// Relevance score of a named key's excerpt: above any unit's (at most 1 plus small bonuses).
const NAMED_SCORE: f64 = 2.0;

/// Byte offsets where `name` is written as the key of an object or list (case-insensitive):
/// `"name": {` or `[` (spaces allowed), or a line's first word followed by `:` and the line's
/// end (YAML); more than
/// [`MAX_OCCURRENCES`] + 1 are not searched for.
/// `hay` is `text` ASCII-lowered (same offsets).
fn key_offsets(text: &str, hay: &[u8], name: &str) -> Vec<usize> {
    let lower = name.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let finder = memchr::memmem::Finder::new(lower.as_bytes());
    for at in finder.find_iter(hay) {
        let end = at + lower.len();
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = |i: usize| bytes.get(i).copied();
        // The first byte after `i` that is not a space or tab.
        let next = |mut i: usize| {
            while after(i).is_some_and(|c| c == b' ' || c == b'\t' || c == b'\r') {
                i += 1;
            }
            (i, after(i))
        };
        // A key whose value is an object or a list: an object of its own, not a field.
        let json = before == Some(b'"') && after(end) == Some(b'"') && {
            let (i, c) = next(end + 1);
            c == Some(b':') && {
                let (i, c) = next(i + 1);
                matches!(c, Some(b'{' | b'['))
                    || c == Some(b'\n') && matches!(next(i + 1).1, Some(b'{' | b'['))
            }
        };
        let yaml = !json && after(end) == Some(b':') && {
            let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
            text[line_start..at]
                .trim_start_matches([' ', '\t', '-'])
                .trim()
                .is_empty()
                && matches!(next(end + 1).1, None | Some(b'\n'))
        };
        if json || yaml {
            out.push(if json { at - 1 } else { at });
            if out.len() > MAX_OCCURRENCES {
                break;
            }
        }
    }
    out
}

/// `raw` with whitespace runs collapsed; when `cut`, it ends at its last member boundary (`,`
/// or a closing bracket) before which no quote is left open, and the cut is marked.
fn excerpt(raw: &str, cut: bool) -> String {
    let collapsed = crate::bench::score::collapse(raw);
    if !cut {
        return collapsed;
    }
    let mut keep = collapsed.as_str();
    while let Some(p) = keep.rfind([',', '}', ']']) {
        let head = &collapsed[..=p];
        if head.matches('"').count().is_multiple_of(2) {
            keep = head;
            break;
        }
        keep = &collapsed[..p];
    }
    if keep.is_empty() {
        // No member boundary (YAML, text): between words, before an open quote.
        keep = &collapsed[..collapsed.rfind(' ').unwrap_or(0)];
        while keep.matches('"').count() % 2 == 1 {
            keep = &keep[..keep.rfind('"').unwrap_or(0)];
        }
        if keep.trim().is_empty() {
            return String::new();
        }
    }
    format!("{} {CUT_MARK}", keep.trim_end_matches(',').trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_the_question_names_is_shown_from_there() {
        let mut resources = serde_json::Map::new();
        for i in 0..50 {
            resources.insert(
                format!("aws_thing_{i}"),
                serde_json::json!({"version": 0, "block": {"attributes": {"id": {"type": "string", "computed": true}}}}),
            );
        }
        resources.insert(
            "aws_instance".into(),
            serde_json::json!({"version": 1, "block": {"attributes": {"ami": {"type": "string", "required": true}}}}),
        );
        let text =
            serde_json::json!({"provider_schemas": {"aws": {"resource_schemas": resources}}})
                .to_string();
        let q = Query::new("What are the required arguments of the aws_instance resource?");
        let c = named_keys(&text, &q);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(c[0].item.text.starts_with(
            "\"aws_instance\":{\"version\":1,\"block\":{\"attributes\":{\"ami\":{\"type\":\"string\",\"required\":true}"
        ), "{}", c[0].item.text);
        // A word written as a key on every record names nothing.
        let q = Query::new("which attributes are computed?");
        assert!(named_keys(&text, &q).is_empty());
    }

    #[test]
    fn a_yaml_key_is_shown_with_its_lines_collapsed_and_the_cut_marked() {
        let mut text = String::from("paths:\n");
        for i in 0..40 {
            text.push_str(&format!(
                "  /items{i}:\n    get:\n      summary: list items {i}\n"
            ));
        }
        text.push_str(
            "  /checkout:\n    post:\n      summary: \"Pay the cart\"\n      responses:\n",
        );
        text.push_str(&"        '200':\n          description: ok\n".repeat(30));
        let q = Query::new("what does the checkout endpoint take?");
        let c = named_keys(&text, &q);
        assert_eq!(c.len(), 0, "`/checkout` is not the word `checkout`: {c:?}");
        let text = text.replace("/checkout:", "checkout:");
        let c = named_keys(&text, &q);
        assert_eq!(c.len(), 1);
        let t = &c[0].item.text;
        assert!(
            t.starts_with("checkout: post: summary: \"Pay the cart\" responses:"),
            "{t}"
        );
        assert!(t.ends_with(CUT_MARK), "{t}");
        assert_eq!(c[0].item.line, Some(122));
    }
}
