//! A record's focus: which of its pairs a record shown in part is shown by (the ones that made
//! it rare or extreme, the intent's words, an error, its names), within [`FOCUS_BYTES`].

use std::collections::{HashMap, HashSet};

use crate::guard::reduce::rank::{tokenize, Query};
use crate::guard::reduce::signal::{severity, Severity};
use crate::guard::reduce::units::{Field, Unit};
use crate::guard::reduce::{show_line_max, CUT_MARK};

/// Bytes of a record shown in part: the fields that matter, not the first ones.
const FOCUS_BYTES: usize = 300;

/// Keys that say which record it is (shown with any field of it that matters).
const IDENTITY_KEYS: &[&str] = &[
    "name",
    "id",
    "title",
    "key",
    "path",
    "file",
    "filename",
    "uri",
    "url",
    "type",
    "kind",
    "package",
    "module",
    "test",
    "testname",
    "classname",
    "rule",
    "ruleid",
    "rule_id",
    "check_id",
    "cve",
    "vulnerabilityid",
    "severity",
    "status",
    "state",
    "level",
    "message",
    "msg",
    "error",
    "reason",
    "detail",
    "evalue",
    "host",
    "address",
    "resource",
    "address",
    "label",
    "code",
    "version",
    "number",
    "no",
];

/// A record's text for the summary: whole when short, else the pairs that matter to this
/// unit: the ones that made it rare or extreme, the ones with the intent's words or an error,
/// and the ones naming the record, within [`FOCUS_BYTES`]. A record whose rendering was cut
/// short (a long value stopped it) is shown by its pairs too, however short the cut text.
pub(super) fn focus_text(
    unit: &Unit,
    fields: &[Field],
    hot: Option<&Vec<usize>>,
    q: &Query,
) -> String {
    let cut = unit.text.ends_with(CUT_MARK);
    if unit.pairs.is_empty() || (unit.text.len() <= FOCUS_BYTES && !cut) {
        return unit.display(q);
    }
    // A query word in most of the record's pairs (`github` in every URL of a GitHub API
    // record) says nothing about which pair matters.
    let toks: Vec<Vec<String>> = unit.pairs.iter().map(|p| tokenize(p)).collect();
    let mut spread: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for t in &toks {
        let mut seen = HashSet::new();
        for w in t.iter().filter(|w| q.has(w)) {
            if seen.insert(w.as_str()) {
                *spread.entry(w.as_str()).or_default() += 1;
            }
        }
    }
    let common = (unit.pairs.len() / 3).max(6);
    // The pair's key (the last word of its field's name, a JSON path's last key, a column
    // header's last word: `Site Name`, `En No`; else as the pair writes it) and its depth in
    // the record (dots and slashes in the field's name).
    let keys: Vec<(String, usize)> = unit
        .pairs
        .iter()
        .enumerate()
        .map(|(k, p)| match unit.fields.get(k) {
            Some(f) => {
                let name = &fields[f.0].name;
                let key = name
                    .rsplit(['.', '/', ' '])
                    .next()
                    .unwrap_or("")
                    .trim_end_matches("[]")
                    .to_ascii_lowercase();
                (key, name.matches(['.', '/']).count())
            }
            None => (
                p.trim_start_matches(['"', '\\'])
                    .split(['"', '\\'])
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase(),
                0,
            ),
        })
        .collect();
    let names = |key: &str| IDENTITY_KEYS.contains(&key) || key.ends_with("name");
    // The record's own names are its shallowest naming keys: a repository's `name`, not its
    // `owner.id`; a wrapper's `data.display_name` when the record is `{kind, data: {...}}`.
    // `type` and `kind` class a record rather than name it: they set no depth.
    let name_depth = keys
        .iter()
        .filter(|(k, _)| names(k) && !matches!(k.as_str(), "type" | "kind"))
        .map(|&(_, d)| d)
        .min()
        .unwrap_or(0);
    // The one that names it best: a title or a `...name` first (what a reader calls the
    // record), then the other naming keys in [`IDENTITY_KEYS`] order.
    let rank_of = |key: &str| {
        if key == "title" || key.ends_with("name") && key != "name" {
            0
        } else {
            1 + IDENTITY_KEYS
                .iter()
                .position(|k| *k == key)
                .unwrap_or(IDENTITY_KEYS.len())
        }
    };
    let best_name = keys
        .iter()
        .enumerate()
        .filter(|(_, (k, d))| {
            *d == name_depth && names(k) && !matches!(k.as_str(), "type" | "kind")
        })
        .min_by_key(|(i, (k, _))| (rank_of(k), *i))
        .map(|(i, _)| i);
    let mut scored: Vec<(f64, usize)> = unit
        .pairs
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let (key, depth) = &keys[k];
            let mut sc = 0.0;
            if Some(k) == best_name && p.len() <= MAX_NAME_FIRST {
                // What the record is called goes first, so that the room never runs out
                // before it (pydoclint's file path, a row's `LOGICAL UNIT NUMBER 77`).
                sc += NAME_FIRST;
            } else if Some(k) == best_name {
                sc += 2.0;
            } else if names(key)
                && (*depth == name_depth || *depth == 0 && matches!(key.as_str(), "type" | "kind"))
            {
                sc += 1.0;
            }
            if k == 0 {
                sc += 0.8;
            }
            let words = toks[k]
                .iter()
                .filter(|t| q.has(t) && spread.get(t.as_str()).is_none_or(|&n| n <= common))
                .count();
            sc += 1.5 * words.min(3) as f64;
            if hot.is_some_and(|h| h.contains(&unit.fields[k].0)) {
                sc += 3.0;
            }
            // The pair that makes the record an error or a warning is why it is shown under
            // Errors: it is shown with it, like a rare value.
            let sev = severity(p);
            if sev != Severity::None && sev == unit.sev {
                sc += SEVERE_PAIR;
            } else if sev == Severity::Error {
                sc += 1.0;
            }
            // A string holding a JSON document (`last-applied-configuration`: a copy of the
            // record itself) is walked as units of its own; in the record it only eats the
            // room of the pairs that answer.
            if embedded_json(p) {
                sc -= EMBEDDED_PENALTY;
            }
            (sc, k)
        })
        .filter(|(sc, _)| *sc > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut keep = Vec::new();
    let mut heads: HashMap<usize, String> = HashMap::new();
    let mut bytes = 0;
    let mut named = false;
    // A value already shown under another key (`k8s-app`, `serviceAccountName` and a selector
    // all `kube-dns`, like the record's name) says nothing new: its room goes to the next pair.
    let mut values: HashSet<&str> = HashSet::new();
    for (sc, k) in scored {
        let value = unit
            .fields
            .get(k)
            .map(|f| f.1.as_str())
            .filter(|v| v.len() >= MIN_SAME_VALUE);
        let is_hot = hot.is_some_and(|h| unit.fields.get(k).is_some_and(|f| h.contains(&f.0)));
        if let Some(v) = value {
            if !values.insert(v) && !is_hot {
                continue;
            }
        }
        let len = unit.pairs[k].len() + 2;
        // The record's name leaves the first pair that matters its room, however long.
        if sc >= NAME_FIRST {
            named = true;
            bytes += len;
            keep.push(k);
            continue;
        }
        if bytes + len > FOCUS_BYTES && keep.len() > usize::from(named) {
            // A long free-text pair that matters (its intent words, or the value that made
            // the record rare) shows its head in the room left: a description's title.
            let room = FOCUS_BYTES.saturating_sub(bytes);
            if sc >= 1.5 && room >= MIN_HEAD_BYTES {
                if let Some(h) = head_of(&unit.pairs[k], room) {
                    bytes += h.len() + 2;
                    heads.insert(k, h);
                    keep.push(k);
                }
            }
            continue;
        }
        bytes += len;
        keep.push(k);
    }
    // A short pair between two kept ones is kept too: the run reads as the file writes it
    // (`"event": …, "status": …, "conclusion": "failure"`), for little more than the ` … `.
    keep.sort_unstable();
    let mut bridged = Vec::new();
    for w in keep.windows(2) {
        // The pairs between two kept ones: one pair, or one pair written for a leaf and
        // each of its attributes (an XML element's text and `format="..."`).
        let gap = w[0] + 1..w[1];
        let k = gap.start;
        if gap.is_empty()
            || heads.contains_key(&w[0])
            || gap.clone().any(|j| unit.pairs[j] != unit.pairs[k])
            || !bridges(&unit.pairs[k], unit.fields.get(k).map(|f| f.1.as_str()))
            || unit.pairs[k].contains(CUT_MARK)
        {
            continue;
        }
        let len = unit.pairs[k].len() + 2;
        if bytes + len <= FOCUS_BYTES + FOCUS_BYTES / 5 {
            bytes += len;
            bridged.extend(gap);
        }
    }
    keep.extend(bridged);
    // A pair too long for the focus (a free-text column taken first) is cut in the middle.
    let shown = unit.render_pairs_with(&keep, &heads);
    if std::env::var_os("TS_DBG").is_some() {
        eprintln!("FOCUS L{} keep={keep:?} {}", unit.line, shown.len());
    }
    if shown.len() > 2 * FOCUS_BYTES {
        show_line_max(&shown, 2 * FOCUS_BYTES)
    } else {
        shown
    }
}

/// Score of a record's best naming pair ([`focus_text`]): above any other pair's.
const NAME_FIRST: f64 = 100.0;
/// Longest naming pair (bytes) taken before every other pair: a longer one competes.
const MAX_NAME_FIRST: usize = 80;

/// Shortest value (bytes) that a second pair repeating it is not shown for ([`focus_text`]):
/// `true`, `0` and `us` repeat by chance, a name does not.
const MIN_SAME_VALUE: usize = 4;

/// What a pair holding an embedded JSON document loses in [`focus_text`]'s ranking: more
/// than the intent's words give it, less than a rare or extreme value (3.0).
const EMBEDDED_PENALTY: f64 = 2.5;

/// True for a pair whose value is a string holding JSON (`"config": "{\"a\":1, …`), as the
/// file writes it (escaped quotes).
pub(super) fn embedded_json(pair: &str) -> bool {
    let Some(p) = pair.find("\":") else {
        return false;
    };
    let v = pair[p + 2..].trim_start();
    ["\"{\\\"", "\"[{\\\"", "\"[\\\""]
        .iter()
        .any(|o| v.starts_with(o))
}

/// What the pair that gives a record its severity adds in [`focus_text`]'s ranking: as much
/// as a rare or extreme value, so an Errors line shows its error.
const SEVERE_PAIR: f64 = 3.0;

/// Longest pair (bytes) kept to join the two kept pairs around it into one run.
const BRIDGE_BYTES: usize = 40;

/// True for a pair short enough to bridge two kept ones: at most [`BRIDGE_BYTES`], or a short
/// value whose markup (an XML element's tags and attributes written twice) makes the pair long:
/// `<admin-status format="Enabled">up</admin-status>`.
fn bridges(pair: &str, value: Option<&str>) -> bool {
    pair.len() <= BRIDGE_BYTES
        || pair.len() <= 2 * BRIDGE_BYTES && value.is_some_and(|v| v.len() <= BRIDGE_BYTES / 4)
}

/// Fewest bytes of room worth showing the head of a long pair in.
const MIN_HEAD_BYTES: usize = 48;

/// The head of `pair` within `max` bytes, cut between words and marked [`CUT_MARK`]; cut
/// before a quote the head leaves open (the quoted string would not be the input's); `None`
/// when too little is left, or only a key (a JSON pair cut before its value's quote).
fn head_of(pair: &str, max: usize) -> Option<String> {
    let budget = max.saturating_sub(CUT_MARK.len() + 1);
    let mut head = super::clip_str(pair, budget);
    if head.len() < pair.len() {
        if let Some(p) = head.rfind(' ') {
            head = &head[..p];
        }
    }
    for q in ['"', '`'] {
        if head.matches(q).count() % 2 == 1 {
            head = &head[..head.rfind(q).unwrap_or(0)];
        }
    }
    // An escaped quote's backslash goes with it (`\"text` inside a JSON string).
    let head = head.trim_end_matches(['\\', ' ']);
    (head.len() >= MIN_HEAD_BYTES / 2 && !head.ends_with([':', '=']))
        .then(|| format!("{head} {CUT_MARK}"))
}
