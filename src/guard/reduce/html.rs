//! HTML pages: tags stripped line by line (so line n of the readable text is line n of the
//! page), scripts and styles dropped, entities decoded, then reduced as text ranked by the intent.

mod article;

use super::text::reduce_lines;
use super::{show_line_max, Ctx, Item, Reduction, Section, MUST};
use regex::Regex;
use std::sync::LazyLock;

static TITLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?is)<title[^>]*>(.*?)</title>").unwrap());
static ENTITY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"&(#x[0-9a-fA-F]+|#\d+|[a-zA-Z]+);").unwrap());

/// Elements whose content is not readable text.
const SKIP: &[&str] = &["script", "style", "noscript", "svg", "template"];

/// Decodes the common named entities and numeric character references.
pub fn decode_entities(s: &str) -> String {
    ENTITY
        .replace_all(s, |c: &regex::Captures<'_>| {
            let e = &c[1];
            let ch = if let Some(h) = e.strip_prefix("#x") {
                u32::from_str_radix(h, 16).ok().and_then(char::from_u32)
            } else if let Some(d) = e.strip_prefix('#') {
                d.parse().ok().and_then(char::from_u32)
            } else {
                match e {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    "nbsp" => Some(' '),
                    "ndash" => Some('–'),
                    "mdash" => Some('—'),
                    _ => None,
                }
            };
            ch.map_or_else(|| c[0].to_string(), |x| x.to_string())
        })
        .into_owned()
}

/// Tags that end a block of text: a paragraph, a heading, a list item, a cell, a line break.
const BLOCK: &[&str] = &[
    "p",
    "div",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "br",
    "tr",
    "td",
    "th",
    "table",
    "article",
    "section",
    "header",
    "footer",
    "blockquote",
    "pre",
    "dt",
    "dd",
    "title",
    "figcaption",
    "nav",
    "aside",
    "main",
    "form",
    "option",
    "hr",
];

/// Marks a block boundary inside a line of [`strip_blocks`]'s output.
pub const BLOCK_SEP: char = '\u{2029}';

/// The readable text of an HTML page, one output line per input line.
pub fn strip(html: &str) -> Vec<String> {
    strip_with(html, false)
}

/// [`strip`], with [`BLOCK_SEP`] where a block tag (`<p>`, `<li>`, `<br>`, ... [`BLOCK`])
/// was, so a one-line page still splits into its paragraphs.
pub fn strip_blocks(html: &str) -> Vec<String> {
    strip_with(html, true)
}

fn strip_with(html: &str, blocks: bool) -> Vec<String> {
    let mut out = String::with_capacity(html.len() / 2);
    let b = html.as_bytes();
    let mut i = 0;
    let mut skip_until: Option<String> = None;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            out.push('\n');
            i += 1;
            continue;
        }
        if let Some(close) = &skip_until {
            if c == b'<'
                && html[i..].len() >= close.len()
                && html[i..i + close.len()].eq_ignore_ascii_case(close)
            {
                skip_until = None;
            } else {
                i += 1;
                continue;
            }
        }
        if c == b'<' {
            // Tag: copy its newlines, skip the rest.
            let name: String = html[i + 1..]
                .chars()
                .take_while(|ch| ch.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            let comment = html[i..].starts_with("<!--");
            let end_pat = if comment { "-->" } else { ">" };
            let end = html[i..]
                .find(end_pat)
                .map_or(b.len(), |e| i + e + end_pat.len());
            for _ in html[i..end].matches('\n') {
                out.push('\n');
            }
            if SKIP.contains(&name.as_str()) {
                skip_until = Some(format!("</{name}"));
            }
            let closing: String = html[i + 1..]
                .strip_prefix('/')
                .map(|r| {
                    r.chars()
                        .take_while(|ch| ch.is_ascii_alphanumeric())
                        .collect::<String>()
                        .to_ascii_lowercase()
                })
                .unwrap_or_default();
            if blocks && (BLOCK.contains(&name.as_str()) || BLOCK.contains(&closing.as_str())) {
                out.push(BLOCK_SEP);
            } else {
                out.push(' ');
            }
            i = end;
            continue;
        }
        let ch_len = html[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&html[i..i + ch_len]);
        i += ch_len;
    }
    out.split('\n')
        .map(|l| {
            let d = decode_entities(l);
            if !blocks {
                return d.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            d.split(BLOCK_SEP)
                .map(|b| b.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|b| !b.is_empty())
                .collect::<Vec<_>>()
                .join(&BLOCK_SEP.to_string())
        })
        .collect()
}

/// Reduces an HTML page as its readable text.
pub fn reduce(html: &str, ctx: &Ctx<'_>) -> Reduction {
    let mut text = strip(html);
    // A last line that is only tags (`</html>` with no newline after it) is still a line of
    // the file: the line count is the file's, not one less.
    if !html.ends_with('\n') {
        if let Some(last) = text.last_mut().filter(|l| l.is_empty()) {
            last.push(' ');
        }
    }
    let refs: Vec<&str> = text.iter().map(String::as_str).collect();
    let mut r = reduce_lines(&refs, super::Kind::Html, ctx);
    // Page text: paragraphs matter, one-word lines (menus, math fragments) and templates do not.
    r.items.retain(|i| {
        !(i.section == Section::KeyFacts
            && (i.text.starts_with("frequent template") || i.text.contains("line template")))
    });
    for it in r.items.iter_mut() {
        if let (Section::Evidence, Some(l)) = (it.section, it.line) {
            let words = text[l - 1].split_whitespace().count();
            it.text = super::show_line(&text[l - 1]);
            if words < 8 {
                it.prio *= 0.3;
            } else if words >= 25 {
                it.prio += 20.0;
            }
        }
    }
    if let Some(lead) = text.iter().position(|l| l.split_whitespace().count() >= 25) {
        let shown = super::show_line_max(&text[lead], 600);
        r.items
            .push(Item::line(Section::Evidence, lead + 1, shown, 95.0));
    }
    // Its headline, byline and dates, as the page writes them.
    let raw: Vec<&str> = html.split('\n').collect();
    r.items.extend(article::items(&raw, &text));
    if let Some(c) = TITLE.captures(html) {
        let t = decode_entities(c[1].trim());
        r.items.push(Item {
            section: Section::KeyFacts,
            order: 0,
            line: None,
            text: format!("title: {}", show_line_max(&t, 200)),
            prio: MUST,
        });
    }
    // The kind line gives the page's size; the readable text is not measured again, since a
    // derived size (its bytes, its words) is not a figure of the page.
    r.items.push(Item::fact(
        3,
        "page: HTML; lines shown as readable text (tags, scripts and styles removed)",
        MUST,
    ));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_tags_split_a_one_line_page() {
        let h = "<html><body><h1>Title here</h1><p>First <b>para</b>.</p><p>Second&nbsp;one</p><ul><li>x</li></ul></body></html>";
        let s = strip_blocks(h);
        assert_eq!(s.len(), 1);
        let blocks: Vec<&str> = s[0].split(BLOCK_SEP).collect();
        assert_eq!(
            blocks,
            vec!["Title here", "First para .", "Second one", "x"]
        );
        assert_eq!(strip(h)[0], "Title here First para . Second one x");
    }

    #[test]
    fn strips_tags_and_keeps_lines() {
        let h = "<html><head><title>T &amp; U</title>\n<script>var x = '<b>';\n</script></head>\n<body><p>A <b>bold</b>\nword</p></body></html>";
        let s = strip(h);
        assert_eq!(s.len(), 5);
        assert_eq!(s[0], "T & U");
        assert_eq!(s[1], "");
        assert_eq!(s[3], "A bold");
        assert_eq!(s[4], "word");
    }
}
