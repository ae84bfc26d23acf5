//! An article page's headline, byline and dates, as the page writes them. A question about an
//! article asks who wrote it, when and what it says; the page names these by markup, not by
//! the question's words: an `<article>`'s first heading, an element whose class or `itemprop`
//! says author (`class="autor"`, `itemprop="author"`, `rel="author"`), a `<time datetime>`, a
//! `<meta property="article:published_time">`. Nothing here knows a site.

use std::sync::LazyLock;

use regex::Regex;

use crate::guard::reduce::{clip_str, Item, Section};

/// A heading tag of the top three levels.
static HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<h[1-3][\s>]").expect("valid regex"));
/// An attribute whose value says author or byline (English, Spanish, Portuguese, French,
/// Italian, German forms).
static BYLINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b(?:class|itemprop|rel|id|name|property)\s*=\s*["'][^"']*(?:author|autor|auteur|byline|firma|verfasser)[^"']*["']"#,
    )
    .expect("valid regex")
});
/// A date element or a publication-date meta field.
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)<time\b|\b(?:property|name|itemprop)\s*=\s*["'](?:article:published_time|datePublished|pubdate|publish[_-]?date|date|dc\.date)["']"#,
    )
    .expect("valid regex")
});
/// An `<article>` element's opening tag.
static ARTICLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<article[\s>]").expect("valid regex"));
/// A `<meta>` tag, and a `content` attribute.
static META: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)<meta\b").expect("valid regex"));
static CONTENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bcontent\s*=").expect("valid regex"));
/// A `content` attribute with nothing in it (`<meta property="article:author" content="">`).
static EMPTY_CONTENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)\bcontent\s*=\s*(?:""|'')"#).expect("valid regex"));

/// Longest snippet of a line shown, in bytes: a long line (a one-line page) shows the element
/// from its tag on.
const MAX_SNIPPET: usize = 240;
/// Lines after an empty byline element searched for its name.
const BYLINE_NEXT: usize = 3;
/// Most words of a byline's text: a name, a place, a date; not a paragraph.
const MAX_BYLINE_WORDS: usize = 14;
/// Date lines shown.
const MAX_DATES: usize = 2;
/// Priority of each item: above the page's paragraphs (at most ~80 with their bonus), below
/// the lead paragraph (95).
const PRIO: f64 = 85.0;

/// The raw line from the tag around byte `at` on: the whole line trimmed when short, else
/// [`MAX_SNIPPET`] bytes from the `<` before `at`, cut after the last complete tag.
fn snippet(line: &str, at: usize) -> String {
    let t = line.trim();
    if t.len() <= MAX_SNIPPET {
        return t.to_string();
    }
    let start = line[..at].rfind('<').unwrap_or(at);
    let s = clip_str(&line[start..], MAX_SNIPPET);
    match s.rfind('>') {
        Some(e) if e > 0 => s[..=e].to_string(),
        _ => s.to_string(),
    }
}

/// Items for an article's headline, byline and dates. `raw` are the page's lines, `text` the
/// same lines as readable text ([`super::strip`]); anchors are 1-based lines.
pub fn items(raw: &[&str], text: &[String]) -> Vec<Item> {
    let words = |i: usize| text.get(i).map_or(0, |t| t.split_whitespace().count());
    let mut out = Vec::new();
    // The headline: the first heading with words after an `<article>`, else the first with
    // three words or more.
    let article = raw.iter().position(|l| ARTICLE.is_match(l));
    let heading = |from: usize| {
        (from..raw.len()).find_map(|i| {
            let m = HEADING.find(raw[i])?;
            (words(i) >= 3).then(|| (i, m.start()))
        })
    };
    if let Some((i, at)) = article.and_then(heading).or_else(|| heading(0)) {
        out.push(Item::line(
            Section::Evidence,
            i + 1,
            snippet(raw[i], at),
            PRIO,
        ));
    }
    // The byline: an author element with a name in it, or in the lines after it.
    'byline: for (i, l) in raw.iter().enumerate() {
        let Some(m) = BYLINE.find(l) else { continue };
        if META.is_match(l) {
            if CONTENT.is_match(l) && !EMPTY_CONTENT.is_match(l) {
                out.push(Item::line(
                    Section::Evidence,
                    i + 1,
                    snippet(l, m.start()),
                    PRIO,
                ));
                break;
            }
            continue;
        }
        for (j, line) in raw.iter().enumerate().skip(i).take(1 + BYLINE_NEXT) {
            let at = if j == i { m.start() } else { 0 };
            let shown = snippet(line, at);
            // A long line's words are its element's, not the whole line's.
            let w = if line.trim().len() <= MAX_SNIPPET {
                words(j)
            } else {
                super::strip(&shown).concat().split_whitespace().count()
            };
            if w > MAX_BYLINE_WORDS {
                break;
            }
            if w > 0 {
                out.push(Item::line(Section::Evidence, j + 1, shown, PRIO));
                break 'byline;
            }
        }
    }
    // The dates: a `<time>` element, a publication-date field.
    let mut dates = 0;
    for (i, l) in raw.iter().enumerate() {
        if dates == MAX_DATES {
            break;
        }
        if let Some(m) = DATE.find(l) {
            if META.is_match(l) && EMPTY_CONTENT.is_match(l) {
                continue;
            }
            out.push(Item::line(
                Section::Evidence,
                i + 1,
                snippet(l, m.start()),
                PRIO,
            ));
            dates += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(html: &str) -> Vec<String> {
        let raw: Vec<&str> = html.split('\n').collect();
        let text = super::super::strip(html);
        items(&raw, &text)
            .into_iter()
            .map(|i| format!("L{}: {}", i.line.unwrap(), i.text))
            .collect()
    }

    #[test]
    fn an_articles_headline_byline_and_date_are_quoted_as_written() {
        let html = "<html><head><title>Site</title>\n\
            <meta property=\"article:author\" content=\"\">\n\
            <meta property=\"article:published_time\" content=\"2013-12-30T21:42:01\">\n\
            </head><body><div class=\"logo\"><h1>\n<span>Site name</span></h1></div>\n\
            <div class=\"fecha\"><time datetime=\"jueves, 09 enero 2014 10:21\">\n\
            <h2>Most read today on the site</h2>\n\
            <article>\n<hgroup>\n<h3>Anticorrupción decidirá en Madrid si recurre</h3></hgroup>\n\
            <p class=\"autor pull-left\">\n\t\t<strong>Patricio Candia</strong> | Palma | 08/01/2014\t</p>\n\
            <p>Body text of the article that goes on for a while.</p></article></body></html>\n";
        let got = run(html).join("\n");
        assert!(
            got.contains("<h3>Anticorrupción decidirá en Madrid si recurre</h3></hgroup>"),
            "{got}"
        );
        assert!(
            got.contains("<strong>Patricio Candia</strong> | Palma | 08/01/2014"),
            "{got}"
        );
        assert!(
            got.contains(
                "<meta property=\"article:published_time\" content=\"2013-12-30T21:42:01\">"
            ),
            "{got}"
        );
        assert!(
            got.contains("<time datetime=\"jueves, 09 enero 2014 10:21\">"),
            "{got}"
        );
        // The empty author field is not a byline.
        assert!(!got.contains("article:author"), "{got}");
    }

    #[test]
    fn a_one_line_page_shows_the_element_not_the_line() {
        let filler = "<div>".to_string() + &"x ".repeat(400) + "</div>";
        let html = format!(
            "<html><body>{filler}<span class=\"byline\">By Ann Lee</span>{filler}</body></html>"
        );
        let got = run(&html).join("\n");
        assert!(
            got.contains("L1: <span class=\"byline\">By Ann Lee</span>"),
            "{got}"
        );
        assert!(got.len() < 400, "{} {got}", got.len());
    }

    #[test]
    fn a_page_with_no_article_markup_gets_nothing() {
        let html = "<html><body>\n<p>just a paragraph</p>\n<ul><li>a</li></ul>\n</body></html>";
        assert!(run(html).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_page_gives_lines_of_it(
            html in "(<(h1|h3|time|meta|p|article|span)( class=\"(author|x)\"| datetime=\"2\"| property=\"date\" content=\"\")?>|[a-zé ]{0,30}|\n|</h1>){0,80}",
        ) {
            let raw: Vec<&str> = html.split('\n').collect();
            let text = super::super::strip(&html);
            for it in items(&raw, &text) {
                let n = it.line.unwrap();
                proptest::prop_assert!(n >= 1 && n <= raw.len());
                // Each item is a piece of its own line, as the page writes it.
                proptest::prop_assert!(raw[n - 1].contains(it.text.trim()), "{:?}", it.text);
            }
        }
    }
}
