//! Intent ranking: a small BM25 over lines or records, with a crude stemmer and a synonym table.
//!
//! The query is the caller's intent plus the tool arguments; documents are lines (or rendered
//! records). Scores only order candidates inside one reduction, so absolute values do not matter.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

/// BM25 term-frequency saturation (Robertson & Zaragoza 2009, common default).
const K1: f64 = 1.2;
/// Verbs that, opening a sentence of the question, ask for the answer's form and name nothing
/// in the output: "Name the failing step", "Give the totals", "Quote the error". Elsewhere in a
/// sentence the same words can be what is asked about ("the pod name", "the report"), so only
/// the first word of a sentence is dropped. `list`, `show` and `tell` are stopwords anywhere.
const IMPERATIVES: &[&str] = &[
    "name",
    "give",
    "quote",
    "state",
    "report",
    "identify",
    "explain",
    "describe",
    "summarize",
    "summarise",
    "include",
    "mention",
    "provide",
    "cite",
    "note",
];

/// `text` with each [`IMPERATIVES`] word that opens a sentence (the text's start, or after
/// `.`, `?`, `!`, `;`, `:` or a line break, then spaces or a list dash) blanked out.
fn without_imperatives(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at_start = true;
    let mut after_mark = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if at_start && c.is_alphabetic() {
            let end = rest
                .find(|c: char| !c.is_alphanumeric())
                .unwrap_or(rest.len());
            let word = &rest[..end];
            if IMPERATIVES.iter().any(|v| v.eq_ignore_ascii_case(word)) {
                out.extend(std::iter::repeat_n(' ', end));
            } else {
                out.push_str(word);
            }
            rest = &rest[end..];
            at_start = false;
            after_mark = false;
            continue;
        }
        // A mark ends a sentence only when a space or line break follows ("3.10.1" and
        // "file.name" go on).
        if c == '\n' || (c.is_whitespace() && after_mark) {
            at_start = true;
        } else if matches!(c, '.' | '?' | '!' | ';' | ':') {
            after_mark = true;
            at_start = false;
        } else if !(c.is_whitespace() || (at_start && matches!(c, '-' | '*'))) {
            at_start = false;
            after_mark = false;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Words that ask where a fact sits, not what it is: "with file and line", "paths and line
/// numbers", "the line number", "file:line". The output writes such a place as `a.py:132:18`
/// or `line 42`, never as these words; as query terms they matched a module named `line` (a
/// pyflakes run's `networkx.generators.line` outranked every `undefined name` asked for,
/// trial of session 45). "line" alone stays a term ("the line protocol", "which line of
/// testme.py").
static LOCATOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(?:files?|paths?|modules?)\s*(?:,|and|/|:)\s*(?:line\s+numbers?|lines?|columns?)(?:\s*(?:,|and|/|:)\s*columns?)?|lines?\s+(?:numbers?|nos?\.?)|line:col(?:umn)?)\b",
    )
    .unwrap()
});

/// `text` with each [`LOCATOR`] phrase blanked out.
fn without_locators(text: &str) -> String {
    LOCATOR
        .replace_all(text, |c: &regex::Captures| " ".repeat(c[0].len()))
        .into_owned()
}

/// BM25 length normalisation (Robertson & Zaragoza 2009, common default).
const B: f64 = 0.75;

/// Words that carry no intent ("what", "the", ...), dropped from queries, as written and
/// stemmed. "summary" is not one: a question names "the trace summary" as it names a section
/// (with it a query term: dev +1 against dropping it, session 34).
const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "by",
    "can",
    "did",
    "do",
    "does",
    "for",
    "from",
    "had",
    "has",
    "have",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "list",
    "me",
    "much",
    "not",
    "of",
    "on",
    "or",
    "say",
    "show",
    "so",
    "tell",
    "that",
    "the",
    "their",
    "them",
    "there",
    "these",
    "this",
    "those",
    "to",
    "was",
    "were",
    "what",
    "when",
    "where",
    "which",
    "who",
    "why",
    "will",
    "with",
    "you",
    "your",
    "run",
    "get",
    "all",
    "every",
    "each",
    "some",
    "then",
    "than",
    "also",
    "just",
    "use",
    "used",
    "using",
    "they",
    "we",
    "our",
    "my",
    "summarize",
    "check",
    "output",
    "file",
    "command",
    "tool",
    "result",
    "results",
];

/// Intent words mapped to words the output itself uses (either side stemmed when used).
const SYNONYMS: &[(&str, &[&str])] = &[
    (
        "fail",
        &[
            "error",
            "fatal",
            "exception",
            "failur",
            "fail",
            "abort",
            "panic",
        ],
    ),
    ("failur", &["error", "fatal", "exception", "fail"]),
    ("broken", &["error", "fail", "exception"]),
    ("wrong", &["error", "fail", "exception", "warn"]),
    ("problem", &["error", "fail", "warn"]),
    ("error", &["error", "exception", "fatal", "fail"]),
    ("warning", &["warn"]),
    ("warn", &["warning"]),
    ("exception", &["error", "throwabl", "caus"]),
    ("healthy", &["ready", "health", "condit", "status"]),
    (
        "unhealthy",
        &["crashloopbackoff", "error", "backoff", "ready", "restart"],
    ),
    ("health", &["ready", "condit", "status"]),
    ("missing", &["not-found", "found", "miss"]),
    ("memory", &["mem", "rss", "memori"]),
    ("memori", &["mem", "rss"]),
    ("cpu", &["cpu"]),
    ("largest", &["size"]),
    ("biggest", &["size"]),
    ("partit", &["partit"]),
    ("version", &["version"]),
    ("test", &["test", "fail"]),
    (
        "unstabl",
        &["error", "warn", "exception", "shutdown", "broken"],
    ),
];

/// Words of a question and the abbreviations outputs write them as, in field names and
/// columns (`maxLatency`, `avg_ms`, `num_errors`, `mem_used`, `pct`).
const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("maximum", &["max"]),
    ("minimum", &["min"]),
    ("average", &["avg", "mean"]),
    ("mean", &["avg"]),
    ("number", &["num", "count", "cnt"]),
    ("percent", &["pct", "percentage"]),
    ("percentage", &["pct", "percent"]),
    ("seconds", &["sec", "secs"]),
    ("milliseconds", &["ms", "msec"]),
    ("microseconds", &["us", "usec"]),
    ("configuration", &["config", "conf", "cfg"]),
    ("directory", &["dir"]),
    ("directories", &["dir"]),
    ("temperature", &["temp"]),
    ("address", &["addr"]),
    ("database", &["db"]),
    ("transactions", &["tx", "txn"]),
    ("received", &["rx", "recv"]),
    ("transmitted", &["tx"]),
    ("sent", &["tx"]),
    ("request", &["req"]),
    ("requests", &["req", "reqs"]),
    ("response", &["resp", "res"]),
    ("error", &["err"]),
    ("errors", &["err", "errs"]),
    ("warnings", &["warn"]),
    ("version", &["ver"]),
    ("package", &["pkg"]),
    ("packages", &["pkg"]),
    ("environment", &["env"]),
    ("authentication", &["auth"]),
    ("utilization", &["util"]),
    ("allocated", &["alloc", "malloc"]),
    ("allocation", &["alloc", "malloc"]),
    ("allocations", &["alloc", "malloc"]),
];

/// Lower-cases, splits on anything but letters, digits, `_`, `-`, `.`, `%`, and stems each token.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '%')) {
        let t = raw.trim_matches(|c: char| c == '-' || c == '_');
        if t.is_empty() || t.len() > 40 {
            continue;
        }
        let lower = t.to_lowercase();
        let lower = lower.trim_start_matches('%').to_string();
        if lower.is_empty() {
            continue;
        }
        out.push(stem(&lower));
        // Also index the parts of joined words: hyphens and underscores ("openssh-server",
        // "x_ratelimit"), and camelCase ("spotPrice" -> "spot", "price").
        let parts = split_joined(t);
        if parts.len() > 1 {
            for part in parts.iter().filter(|p| p.len() > 1) {
                out.push(stem(&part.to_lowercase()));
            }
        }
    }
    out
}

/// The parts of a joined word: split at `-` and `_`, where a lower-case letter or digit is
/// followed by an upper-case one, and before the last capital of an acronym that starts a
/// word (`pDBPassword` -> `p`, `DB`, `Password`; `HTTPServer` -> `HTTP`, `Server`).
pub(crate) fn split_joined(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for piece in t.split(['-', '_']) {
        let b = piece.as_bytes();
        let mut start = 0;
        for i in 1..b.len() {
            let acronym_end = b[i].is_ascii_uppercase()
                && b[i - 1].is_ascii_uppercase()
                && b.get(i + 1).is_some_and(|c| c.is_ascii_lowercase());
            if acronym_end
                || b[i].is_ascii_uppercase()
                    && (b[i - 1].is_ascii_lowercase() || b[i - 1].is_ascii_digit())
            {
                out.push(&piece[start..i]);
                start = i;
            }
        }
        if start < piece.len() {
            out.push(&piece[start..]);
        }
    }
    out
}

/// A crude suffix stripper (enough to match "failed"/"failure"/"fails", "matrices"/"matrix").
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || word.chars().any(|c| c.is_ascii_digit()) {
        return word.to_string();
    }
    for (suffix, repl) in [
        ("ices", "ix"),
        ("ures", ""),
        ("ure", ""),
        ("ioned", ""),
        ("ions", ""),
        ("ion", ""),
        ("ing", ""),
        // "policies", "policied" and "policy" meet at `polici` (`y` becomes `i` below).
        ("ied", "i"),
        ("ies", "i"),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
        ("y", "i"),
        // "license"/"licenses", "update"/"updates", "value"/"values" meet at one stem.
        ("e", ""),
    ] {
        if let Some(base) = word.strip_suffix(suffix) {
            if base.len() >= 3 && !(suffix == "s" && base.ends_with('s')) {
                return format!("{base}{repl}");
            }
        }
    }
    word.to_string()
}

/// The stemmed, expanded terms of a query (intent + tool arguments).
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Stemmed query terms, with synonyms added; each maps to its weight (1.0 own, 0.5 synonym).
    pub terms: HashMap<String, f64>,
    /// The question's words as written, lowercase, outer punctuation trimmed (`openssh-server`,
    /// `payment`), 3+ characters, stopwords dropped: a unit holding one of them whole, as a
    /// token of its own, names the object asked about ([`Query::names_in`]).
    pub names: Vec<String>,
    /// Stems of the words the question negates ("not Established", "non-emergency"): a unit
    /// holding one is what the answer is not, and ranks lower for relevance.
    pub negated: Vec<String>,
    /// The values the question sets aside in a list after [`question::SET_ASIDE`] (`licenses
    /// other than MIT/Apache-2.0/Unlicense`): its words as written (case kept), split at
    /// whitespace, `/` and `,`, outer punctuation trimmed, stopwords and `or`/`and` dropped; at
    /// most [`question::MAX_SET_ASIDE`]. A field whose values these make up picks the records
    /// with any other ([`crate::guard::reduce::signals`]).
    pub set_aside: Vec<String>,
    /// Clock times the question writes (`around 11:02`), as `HH:MM`: a unit holding one (a
    /// log line stamped `11:02:33`) matches the query term [`question::clock_term`] of it.
    pub clocks: Vec<String>,
    /// The words the question calls a key ([`question::keys_in`]: "a 'decorator' field", "the
    /// key `reboot_required`"), lower case: records holding such a key, where only some do,
    /// are what it asks about.
    pub keys: Vec<String>,
    /// Runs of two or more consecutive words of the question, stemmed, between punctuation
    /// and stopwords ([`question::phrases_in`]: "InnoDB buffer pool and log buffer size"
    /// gives `[innodb, buffer, pool]` and `[log, buffer, siz]`): a key the output joins from them
    /// (`innodb-buffer-pool-size`) names what the question spells in words
    /// ([`crate::guard::reduce::select::compounds`]).
    pub phrases: Vec<Vec<String>>,
}

impl Query {
    /// Builds a query from free text (intent and argument values); stopwords are dropped, and
    /// so is a verb that opens a sentence to ask for the answer's form ([`IMPERATIVES`]).
    pub fn new(text: &str) -> Self {
        let text = without_imperatives(&without_locators(text));
        let text = text.as_str();
        let stop: HashSet<&str> = STOPWORDS.iter().copied().collect();
        let stop_stems: HashSet<String> = STOPWORDS.iter().map(|w| stem(w)).collect();
        let mut terms: HashMap<String, f64> = HashMap::new();
        // Two words of the question written as one in the output ("rate limit" ->
        // "ratelimit", "user name" -> "username").
        let raw: Vec<&str> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let words: Vec<String> = raw.iter().map(|w| w.to_lowercase()).collect();
        // Words in capitals, in a question mostly in lower case.
        let caps = |w: &str| w.len() >= 2 && w.chars().all(|c| !c.is_lowercase());
        let mixed = raw.iter().filter(|w| caps(w)).count() * 2 < raw.len();
        let shouted: Vec<bool> = raw.iter().map(|w| mixed && caps(w)).collect();
        for w in words.windows(2) {
            if w.iter().all(|x| x.len() >= 3 && !stop.contains(x.as_str())) {
                terms.entry(format!("{}{}", w[0], w[1])).or_insert(0.7);
            }
        }
        for t in tokenize(text) {
            // Tokens are stemmed: a stopword is dropped in its stemmed form too ("this" is
            // `thi`, "file" `fil`, "where" `wher`).
            if stop.contains(t.as_str()) || stop_stems.contains(t.as_str()) || t.len() < 2 {
                continue;
            }
            for (k, syns) in SYNONYMS {
                // Compared and added as [`stem`] writes them: the table's `healthy`, `memory`
                // and `status` are `healthi`, `memori` and `statu` in tokens.
                if stem(k) == t {
                    for s in syns.iter() {
                        terms.entry(stem(s)).or_insert(0.5);
                    }
                }
            }
            // The same word written short, as field names write it: nearly the word itself.
            for (long, short) in ABBREVIATIONS {
                if stem(long) == t {
                    for s in short.iter() {
                        terms.entry(stem(s)).or_insert(0.8);
                    }
                }
            }
            terms.insert(t, 1.0);
        }
        let mut names: Vec<String> = Vec::new();
        for w in text.split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ',' | ';'
                        | '('
                        | ')'
                        | '`'
                        | '"'
                        | '\''
                        | '?'
                        | '!'
                        | '['
                        | ']'
                        | '{'
                        | '}'
                        | '='
                        | '<'
                        | '>'
                )
        }) {
            let w = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            if w.chars().count() >= 3 && !stop.contains(w.as_str()) && !names.contains(&w) {
                names.push(w);
            }
        }
        // A negated word ("neighbors that are not Established", "non-emergency") names what
        // the answer is not: units holding it are the many, not the few asked about.
        let mut neg = Vec::new();
        for w in negated(&words, &shouted, &stop) {
            let st = stem(&w);
            terms.remove(&st);
            names.retain(|n| *n != w);
            neg.push(st);
        }
        // The list runs to the end of the clause, so it may hold more than values ("other
        // than the vendored ones failed to build"): its words stay query terms, and only a
        // field whose values they make up reads them ([`Query::set_aside`]).
        // A clock time is the minute asked about, not two numbers.
        let clocks = clocks_in(text);
        for c in &clocks {
            for part in c.split(':') {
                terms.remove(part);
                terms.remove(part.trim_start_matches('0'));
            }
            terms.insert(clock_term(c), CLOCK_WEIGHT);
        }
        Query {
            terms,
            names,
            negated: neg,
            set_aside: set_aside(text, &stop),
            clocks,
            keys: keys_in(text, &stop),
            phrases: question::phrases_in(text, &stop, stem),
        }
    }

    /// Indices into [`Query::names`] of the question's words that `text` holds as whole
    /// tokens (split on whitespace and `,;:()[]{}"'=|<>`, outer punctuation trimmed), ignoring
    /// case.
    pub fn names_in(&self, text: &str) -> Vec<usize> {
        let mut found: Vec<usize> = Vec::new();
        if self.names.is_empty() {
            return found;
        }
        for tok in text.split(token_sep) {
            let tok = tok.trim_matches(|c: char| !c.is_alphanumeric());
            if tok.len() < 3 {
                continue;
            }
            for (k, n) in self.names.iter().enumerate() {
                if tok.eq_ignore_ascii_case(n) && !found.contains(&k) {
                    found.push(k);
                }
            }
        }
        found
    }

    /// True when the query has no usable term.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// True when `term` (already stemmed) is one of the query's own or synonym terms.
    pub fn has(&self, term: &str) -> bool {
        self.terms.contains_key(term)
    }

    /// True when `word`, a token of a field or column name, is a query term ([`Query::has`])
    /// or shares a prefix with one: names are compounds and abbreviations, so "stars" names
    /// `stargazers_count` and "memory" names `mem_used` (the query term at least
    /// [`MIN_PREFIX_TERM`] chars, the field's word at least [`MIN_PREFIX_WORD`]).
    ///
    /// Hyphens and underscores do not count: "e-values" names `Hsp_evalue`, "bit-score"
    /// `bitscore`.
    pub fn names_word(&self, word: &str) -> bool {
        let word = bare(word);
        self.has(&word)
            || self.terms.keys().any(|t| {
                let t = bare(t);
                t.len() >= MIN_PREFIX_TERM
                    && word.len() >= MIN_PREFIX_WORD
                    && (word.starts_with(&*t) || t.starts_with(&*word))
            })
    }
}

/// True for a character that ends a name token: whitespace and `,;:()[]{}"'=|<>` (a key's
/// `:` or `=`, a quote, a bracket, a table's `|`). Shared by [`Query::names_in`] and the
/// key rows of [`crate::guard::reduce::select::compounds`].
pub(crate) fn token_sep(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            ',' | ';'
                | ':'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '"'
                | '\''
                | '='
                | '|'
                | '<'
                | '>'
        )
}

/// `w` without its hyphens and underscores (`e-valu` -> `evalu`), borrowed when it has none.
fn bare(w: &str) -> std::borrow::Cow<'_, str> {
    if w.contains(['-', '_']) {
        w.chars().filter(|c| !matches!(c, '-' | '_')).collect()
    } else {
        w.into()
    }
}

/// Shortest query term that names a field word it is a prefix of, or that starts with it.
const MIN_PREFIX_TERM: usize = 4;
/// Shortest field word that a query term starting with it names (`mem`, `cpu`, `req`).
const MIN_PREFIX_WORD: usize = 3;

/// BM25 scores of `docs` against `query`; one score per document, 0.0 for no match.
pub fn bm25<S: AsRef<str>>(query: &Query, docs: &[S]) -> Vec<f64> {
    bm25_with(query, docs, None)
}

/// Share of the documents a query term must be in to tell none of them apart
/// ([`bm25_discriminating`]): `id` and `length` on every line of a CAN bus log. Measured: at
/// 0.5 the dev corpus lost 3 facts; 0.7 to 0.9 moved no dev file.
pub const UBIQUITOUS_SHARE: f64 = 0.8;

/// Fewest documents for [`bm25_discriminating`] to judge a term ubiquitous.
const MIN_UBIQUITOUS_DOCS: usize = 20;

/// [`bm25`] without the query terms found in at least [`UBIQUITOUS_SHARE`] of `docs` (of
/// [`MIN_UBIQUITOUS_DOCS`] or more). Such a term still scores under BM25 (a small IDF), and
/// once the scores are normalised to the best, the shortest lines that hold it rank as
/// perfect matches: a CAN log's relevance was every 1-byte frame of one id. With it gone, a
/// question whose every word is on every line matches nothing, and the budget goes to the
/// counts and the other channels.
pub fn bm25_discriminating<S: AsRef<str>>(query: &Query, docs: &[S]) -> Vec<f64> {
    bm25_with(query, docs, Some(UBIQUITOUS_SHARE))
}

fn bm25_with<S: AsRef<str>>(query: &Query, docs: &[S], ubiquitous: Option<f64>) -> Vec<f64> {
    if query.is_empty() || docs.is_empty() {
        return vec![0.0; docs.len()];
    }
    let toks: Vec<Vec<String>> = docs
        .iter()
        .map(|d| {
            let mut t = tokenize(d.as_ref());
            if !query.clocks.is_empty() {
                let mine = clocks_in(d.as_ref());
                t.extend(
                    query
                        .clocks
                        .iter()
                        .filter(|c| mine.contains(c))
                        .map(|c| clock_term(c)),
                );
            }
            t
        })
        .collect();
    let n = toks.len() as f64;
    let avg = toks.iter().map(Vec::len).sum::<usize>() as f64 / n.max(1.0);
    let mut df: HashMap<&str, usize> = HashMap::new();
    for t in &toks {
        let uniq: HashSet<&str> = t.iter().map(String::as_str).collect();
        for u in uniq {
            if query.terms.contains_key(u) {
                *df.entry(u).or_default() += 1;
            }
        }
    }
    if let Some(share) = ubiquitous.filter(|_| toks.len() >= MIN_UBIQUITOUS_DOCS) {
        df.retain(|_, d| (*d as f64) < share * n);
    }
    toks.iter()
        .map(|t| {
            let len = t.len() as f64;
            // Summed in term order: a HashMap's order changes per process, and with it the
            // last bits of the sum that break ties between equally relevant units.
            let mut tf: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
            for w in t {
                if query.terms.contains_key(w.as_str()) {
                    *tf.entry(w.as_str()).or_default() += 1;
                }
            }
            tf.iter()
                .filter(|(w, _)| ubiquitous.is_none() || df.contains_key(*w))
                .map(|(w, f)| {
                    let d = df.get(w).copied().unwrap_or(0) as f64;
                    let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                    let f = *f as f64;
                    query.terms[*w] * idf * f * (K1 + 1.0)
                        / (f + K1 * (1.0 - B + B * len / avg.max(1.0)))
                })
                .sum()
        })
        .collect()
}

mod question;
#[cfg(test)]
mod tests;

use question::{clock_term, clocks_in, keys_in, negated, set_aside, CLOCK_WEIGHT};
