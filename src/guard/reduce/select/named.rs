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
            // A YAML key's value is its indented block, not the lines after it.
            let line_start = text[..off].rfind('\n').map_or(0, |p| p + 1);
            let line_end = text[off..].find('\n').map_or(text.len(), |p| off + p);
            let end = if text.as_bytes()[off] == b'"' {
                text.len()
            } else if text.as_bytes().get(off + name.len()) == Some(&b':') {
                yaml_block_end(text, line_start).unwrap_or(text.len())
            } else {
                // A pinned package: its line and what is indented under it (`# via boto3`).
                yaml_block_end(text, line_start).unwrap_or(line_end)
            };
            let raw = clip_str(&text[off..end], EXCERPT_BYTES);
            let shown = excerpt(raw, raw.len() < end - off);
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
                && matches!(next(end + 1).1, Some(b'\n'))
                && yaml_block_end(text, line_start).is_some()
        };
        // A package pinned to its version at a line's start (a lock file's or `uv pip
        // compile`'s `boto3==1.33.13`, `express@4.18.2` in an `npm ls` tree, `serde v1.0.2`
        // in a `cargo tree`; trial of session 50): the line names that package.
        let pinned = !json && !yaml && {
            let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
            let lead = text[line_start..at]
                .trim_start_matches(|c: char| c.is_whitespace() || "├└│─-`|+\\".contains(c));
            let rest = &bytes[end..bytes.len().min(end + 4)];
            let digit = |i: usize| rest.get(i).is_some_and(u8::is_ascii_digit);
            lead.is_empty()
                && (rest.starts_with(b"==") && digit(2)
                    || rest.starts_with(b"@") && digit(1)
                    || rest.starts_with(b" v") && digit(2))
        };
        if json || yaml || pinned {
            out.push(if json { at - 1 } else { at });
            if out.len() > MAX_OCCURRENCES {
                break;
            }
        }
    }
    out
}

/// Width of a line's indentation (a tab counts as one column: indentation is compared only
/// within one file's lines).
fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// Where the indented block under the YAML key line starting at byte `line_start` ends (the
/// byte offset of the first non-blank line indented no deeper than the key, or the text's
/// end); `None` when no block opens there: the next non-blank line is not indented deeper,
/// nor a `- ` item at the key's indentation. A man page's `bash:` closing a sentence, with
/// the example under it at the same indentation, is no key (trial of session 46: its "value"
/// ran on across ten lines and a blank one).
fn yaml_block_end(text: &str, line_start: usize) -> Option<usize> {
    let key_line = text[line_start..].split('\n').next().unwrap_or("");
    let base = indent(key_line);
    let mut off = line_start + key_line.len() + 1;
    let mut opened = false;
    while off < text.len() {
        let line = text[off..].split('\n').next().unwrap_or("");
        if !line.trim().is_empty() {
            let own = indent(line);
            let item = own == base && line[own..].starts_with("- ");
            if !opened {
                if own <= base && !item {
                    return None;
                }
                opened = true;
            } else if own < base || (own == base && !item) {
                return Some(off);
            }
        }
        off += line.len() + 1;
    }
    opened.then_some(text.len())
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

    #[test]
    fn a_yaml_key_shows_its_own_block_and_a_line_ending_in_a_colon_is_no_key() {
        let mut text = String::from("jobs:\n");
        for i in 0..20 {
            text.push_str(&format!("  build{i}:\n    runs-on: ubuntu\n"));
        }
        text.push_str("  deploy:\n    needs: build3\n    steps:\n    - run: make deploy\n");
        text.push_str("other:\n  x: 1\n");
        let q = Query::new("what does the deploy job need?");
        let c = named_keys(&text, &q);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            c[0].item.text,
            "deploy: needs: build3 steps: - run: make deploy"
        );
        // A sentence closing on `bash:` above an example at its own indentation.
        let man = "     sequence that quotes the current word in\n     bash:\n\n     $if Bash\n     \"\\C-xq\": quote\n     $endif\n";
        let q = Query::new("What does the bash globstar shell option do?");
        assert!(named_keys(man, &q).is_empty());
    }

    #[test]
    fn a_package_pinned_at_a_lines_start_is_named() {
        // `uv pip compile -v` (trial of session 50): the resolved pins under a long log.
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&format!(
                "DEBUG Searching for a compatible version of boto3 (<1.{i})\n"
            ));
        }
        text.push_str("boto3==1.33.13\n    # via -r reqs.in\nbotocore==1.33.13\n    # via boto3\n");
        text.push_str("urllib3==2.0.7\n    # via botocore\n");
        let q = Query::new("which versions did uv resolve for boto3 and urllib3?");
        let c = named_keys(&text, &q);
        let shown: Vec<&str> = c.iter().map(|c| c.item.text.as_str()).collect();
        assert_eq!(
            shown,
            [
                "boto3==1.33.13 # via -r reqs.in",
                "urllib3==2.0.7 # via botocore"
            ]
        );
        assert_eq!(c[0].item.line, Some(41));
    }
}
