//! What kind of answer the intent asks for, read from its question words: the largest or
//! smallest of something, whether anything unusual happened, how many, why something failed,
//! or a plain lookup. The kinds weight the selector's channels ([`super::select`]) and widen
//! the extremes kept, so that a question about the slowest requests spends its budget on the
//! slowest requests. Plain English question words, no rule for any tool or file.

use super::rank::{stem, tokenize, Query};

/// The kinds of answer an intent asks for (several may hold).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Asks {
    /// The largest / most / slowest of something ("which endpoints are slowest?").
    pub most: bool,
    /// The smallest / least / fastest of something.
    pub least: bool,
    /// Whether anything unusual, other or failing is there ("did any login succeed?",
    /// "licenses other than MIT?").
    pub anomaly: bool,
    /// A count, total or summary ("how many tests failed?", "how big is the heap overall?").
    pub count: bool,
    /// Why something failed or what went wrong.
    pub why: bool,
    /// Whether something worked ("did creating the label succeed?", "did the build pass?"):
    /// its errors are the answer either way.
    pub outcome: bool,
    /// Something of each of many parts ("the top hit for each query", "per file", "every
    /// commit's author"): one answer per section, not the best of the whole.
    pub each: bool,
    /// A number the answer's values are compared with ("e-values above 0.001", "requests
    /// over 500 ms"): the records on the asked side of it are the answer.
    pub limit: Option<Limit>,
    /// Which end of a time line the question asks for ("which certificate expires first?",
    /// "the newest release"): the dates written in the output rank by it
    /// ([`super::signals`]).
    pub when: Option<When>,
}

/// The end of a time line a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// The earliest date ("oldest", "expires first", "soonest").
    Earliest,
    /// The latest date ("newest", "most recent", "last modified").
    Latest,
    /// Both ("the oldest and the newest").
    Both,
}

impl When {
    /// Reads the time words of `lower` (the intent, lower case): `None` when it has none.
    fn of(lower: &str, words: &[String]) -> Option<Self> {
        let has = |list: &[&str]| {
            list.iter().any(|w| {
                if w.contains(' ') {
                    lower.contains(w)
                } else {
                    words.iter().any(|t| t == w)
                }
            })
        };
        match (has(EARLIEST), has(LATEST)) {
            (true, true) => Some(When::Both),
            (true, false) => Some(When::Earliest),
            (false, true) => Some(When::Latest),
            (false, false) => None,
        }
    }

    /// Whether the earliest dates are asked for.
    pub fn earliest(self) -> bool {
        matches!(self, When::Earliest | When::Both)
    }

    /// Whether the latest dates are asked for.
    pub fn latest(self) -> bool {
        matches!(self, When::Latest | When::Both)
    }
}

/// Words and phrases that ask for the earliest date: the first to expire, the oldest entry.
const EARLIEST: &[&str] = &[
    "earliest",
    "oldest",
    "soonest",
    "expires first",
    "expire first",
    "expiring first",
    "expired first",
    "first to expire",
    "next to expire",
    "expires next",
    "expire next",
    "expiring next",
];
/// Words and phrases that ask for the latest date: the newest release, the last change.
const LATEST: &[&str] = &[
    "latest",
    "newest",
    "youngest",
    "most recent",
    "most recently",
    "last modified",
    "last updated",
    "last changed",
];

/// A threshold a question states: values above (or below) `value`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Values above the threshold are asked for (else values below it).
    pub above: bool,
    /// The threshold as written (`500` of "over 500 ms").
    pub value: f64,
    /// The threshold scaled by its unit as field values are read (0.5 for "over 500 ms": a
    /// value written `350ms` reads 0.35); `value` when it has none.
    pub scaled: f64,
    /// Whether the threshold is written with a unit the values are read with (`ms`, `s`,
    /// `MB`, `%`).
    pub unit: bool,
    /// Whether a value equal to it is on the asked side ("at least 899 ms", "899 ms or more",
    /// `>= 899`).
    pub inclusive: bool,
}

/// A comparison word or sign, then a number: the threshold a question states.
static LIMIT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:(above|over|greater than|more than|higher than|larger than|bigger than|longer than|slower than|exceeds?|exceeding)|(below|under|less than|lower than|smaller than|shorter than|faster than))\s+(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s?([a-zµ%]{0,3})\b|(>=?|<=?)\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s?([a-zµ%]{0,3})\b",
    )
    .unwrap()
});

/// A threshold that counts its own value: "at least 899 ms", "at most 5", "899 ms or more".
static LIMIT_INCLUSIVE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:(at least|no less than|not less than)|(at most|no more than|not more than))\s+(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s?([a-zµ%]{0,3})\b|(?:^|[^\w.])(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s?([a-zµ%]{0,3})\s+or\s+(?:(more|longer|higher|above|greater|larger|over|slower)|(less|fewer|shorter|lower|below|under|faster))\b",
    )
    .unwrap()
});

impl Limit {
    /// The first threshold `intent` states, if any.
    pub fn of(intent: &str) -> Option<Limit> {
        let (above, num, unit, inclusive) = if let Some(c) = LIMIT.captures(intent) {
            match (c.get(1), c.get(2), c.get(5)) {
                (Some(_), _, _) => (true, c.get(3)?, c.get(4), false),
                (_, Some(_), _) => (false, c.get(3)?, c.get(4), false),
                (_, _, Some(sign)) => (
                    sign.as_str().starts_with('>'),
                    c.get(6)?,
                    c.get(7),
                    sign.as_str().ends_with('='),
                ),
                _ => return None,
            }
        } else {
            let c = LIMIT_INCLUSIVE.captures(intent)?;
            match (c.get(1), c.get(2), c.get(7), c.get(8)) {
                (Some(_), _, _, _) => (true, c.get(3)?, c.get(4), true),
                (_, Some(_), _, _) => (false, c.get(3)?, c.get(4), true),
                (_, _, Some(_), _) => (true, c.get(5)?, c.get(6), true),
                (_, _, _, Some(_)) => (false, c.get(5)?, c.get(6), true),
                _ => return None,
            }
        };
        let value: f64 = num.as_str().parse().ok()?;
        let unit = unit.map_or("", |m| m.as_str());
        // With its unit, as field values are read ([`number`]: `500 ms` is 0.5 s).
        let with_unit = crate::guard::reduce::signals::number(&format!("{}{unit}", num.as_str()))
            .filter(|_| !unit.is_empty());
        Some(Limit {
            above,
            value,
            scaled: with_unit.unwrap_or(value),
            unit: with_unit.is_some(),
            inclusive,
        })
    }

    /// `intent` without the thresholds it states: their numbers are compared with values, not
    /// searched for as words (a question about requests "over 500 ms" is not about the
    /// lines that say `500`).
    pub fn strip(intent: &str) -> String {
        let s = LIMIT.replace_all(intent, " ");
        LIMIT_INCLUSIVE.replace_all(&s, " ").into_owned()
    }

    /// The threshold to compare with, as written or scaled by its unit.
    pub fn with(self, scaled: bool) -> Limit {
        Limit {
            value: if scaled { self.scaled } else { self.value },
            ..self
        }
    }

    /// Whether `v` is on the asked side of the threshold.
    pub fn holds(&self, v: f64) -> bool {
        match (self.above, self.inclusive) {
            (true, false) => v > self.value,
            (true, true) => v >= self.value,
            (false, false) => v < self.value,
            (false, true) => v <= self.value,
        }
    }
}

/// The words of `lower` as written (split at anything but letters and digits), unstemmed.
fn lower_words(lower: &str) -> Vec<String> {
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Words that ask for one answer per part of the output.
const EACH: &[&str] = &["each", "every", "per"];

/// Words that ask for the top of a ranking.
const MOST: &[&str] = &[
    "most",
    "largest",
    "biggest",
    "highest",
    "top",
    "slowest",
    "longest",
    "heaviest",
    "hottest",
    "maximum",
    "max",
    "greatest",
    "worst",
    "peak",
    // A spike is a peak in a series ("when did the disk write spike occur?", trial and live
    // set of session 46: `sar -A`, `iostat -x`).
    "spike",
    "spikes",
    "spiked",
    "expensive",
    "costliest",
    "busiest",
    "oldest",
    "newest",
    "latest",
    "popular",
    "frequent",
    "dominant",
    "dominate",
    "hungriest",
    "widest",
    "deepest",
    "tallest",
    "strongest",
    "loudest",
    "warmest",
    "thickest",
    "furthest",
    "farthest",
    "big",
    "large",
    "slow",
    "hot",
];
/// Words that ask for the bottom of a ranking.
const LEAST: &[&str] = &[
    "least",
    "smallest",
    "lowest",
    "fastest",
    "shortest",
    "minimum",
    "min",
    "fewest",
    "cheapest",
    "low",
    "small",
    "short",
    "fast",
    "cheap",
    "zero",
    "narrowest",
    "thinnest",
    "weakest",
    "lightest",
    "coldest",
    "nearest",
    "closest",
];
/// Phrases that ask for the most negative numbers, read as the lowest: (phrase, its reading).
const NEGATIVE_MOST: &[(&str, &str)] = &[
    ("most negative", "lowest"),
    ("more negative", "lower"),
    ("largest negative", "lowest"),
    ("biggest negative", "lowest"),
];
/// Words that ask whether something out of the ordinary is there.
const ANOMALY: &[&str] = &[
    "any",
    "other",
    "unusual",
    "except",
    "besides",
    "rare",
    "only",
    "differ",
    "different",
    "unexpected",
    "anomal",
    "outlier",
    "odd",
    "non",
    "not",
    "succeed",
    "success",
    "firing",
    "active",
    "vulnerab",
    "critical",
    "high",
    "insecure",
    "deprecated",
    "changed",
    "new",
    "missing",
    "unhealthy",
    "down",
    "stale",
    "leak",
];
/// Words that ask for a number or a summary.
const COUNT: &[&str] = &[
    "how many",
    "how much",
    "number of",
    "count",
    "total",
    "overall",
    "summary",
    "summarize",
    "statistic",
    "percentage",
    "ratio",
    "size",
    "in all",
];
/// Words that ask what went wrong.
const WHY: &[&str] = &[
    "why",
    "fail",
    "error",
    "crash",
    "wrong",
    "broken",
    "exception",
    "problem",
    "cause",
    "issue",
    "reject",
    "denied",
    "refus",
    "panic",
    "abort",
    "timeout",
];

/// Words that ask whether something worked, or name a step whose outcome is the point (an
/// agent's `_intent` is often "run the tests", "build the app").
const OUTCOME: &[&str] = &[
    "succeed",
    "success",
    "successful",
    "pass",
    "passed",
    "work",
    "worked",
    "status",
    "run",
    "build",
    "test",
    "tests",
    "compile",
    "install",
    "deploy",
    "check",
];

impl Asks {
    /// Reads `intent`.
    pub fn of(intent: &str) -> Self {
        // "The most negative energy" is the lowest one: the ranking's side is the number's,
        // not the word "most"'s.
        let lower = NEGATIVE_MOST
            .iter()
            .fold(intent.to_lowercase(), |l, (from, to)| l.replace(from, to));
        let words: Vec<String> = tokenize(&lower);
        let has = |list: &[&str]| {
            list.iter().any(|w| {
                if w.contains(' ') {
                    lower.contains(w)
                } else {
                    let s = stem(w);
                    words
                        .iter()
                        .any(|t| *t == s || t.starts_with(&s) && s.len() >= 5)
                }
            })
        };
        Asks {
            most: has(MOST),
            least: has(LEAST),
            anomaly: has(ANOMALY),
            count: has(COUNT),
            why: has(WHY),
            outcome: has(OUTCOME),
            each: lower
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| EACH.contains(&w)),
            limit: Limit::of(intent),
            when: When::of(&lower, &lower_words(&lower)),
        }
    }

    /// Whether the intent asks for any extreme.
    pub fn ranked(&self) -> bool {
        self.most || self.least
    }
}

/// English words of a ranking mapped to the names fields that measure it carry: "slowest"
/// is a time, "largest" a size, "expensive" a cost. Added to the query at a low weight so a
/// field like `duration_ms` or `acquisition_cost` matches the question.
const MEASURES: &[(&[&str], &[&str])] = &[
    (
        &[
            "slow", "slowest", "fast", "fastest", "long", "longest", "latency", "took", "time",
            "duration",
        ],
        &[
            "time", "duration", "elapsed", "latency", "ms", "took", "pause", "wall", "cpu",
        ],
    ),
    (
        &[
            "large", "largest", "big", "biggest", "small", "smallest", "size", "heavy", "heaviest",
            "space", "disk",
        ],
        &[
            "size", "bytes", "length", "len", "total", "kb", "mb", "kib", "mib", "rss", "used",
        ],
    ),
    (
        &["memory", "heap", "ram", "mem"],
        &[
            "mem", "memory", "rss", "vsz", "heap", "shallow", "retained", "size", "bytes",
        ],
    ),
    (
        &[
            "expensive",
            "cheap",
            "cheapest",
            "cost",
            "costliest",
            "price",
            "spend",
            "money",
        ],
        &["cost", "price", "amount", "value", "total", "usd", "spend"],
    ),
    (
        &[
            "hot", "hottest", "busy", "busiest", "popular", "frequent", "most", "many",
        ],
        &[
            "count",
            "samples",
            "hits",
            "calls",
            "requests",
            "total",
            "self",
            "frequency",
        ],
    ),
];

/// Adds the measure names of `intent`'s ranking words to `q` (weight 0.4).
pub fn add_measures(q: &mut Query, intent: &str) {
    let words = tokenize(intent);
    for (asks, names) in MEASURES {
        if asks.iter().any(|a| words.contains(&stem(a))) {
            for n in names.iter() {
                q.terms.entry(stem(n)).or_insert(0.4);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_or_a_did_it_work_question_asks_for_its_outcome() {
        for intent in [
            "run the tests",
            "build the app for release",
            "did creating the label succeed?",
        ] {
            assert!(Asks::of(intent).outcome, "{intent}");
        }
        let q = Asks::of("which sites declared an unusual event?");
        assert!(!q.outcome && !q.why);
        assert!(Asks::of("which datastores are low on free space?").least);
    }

    #[test]
    fn the_most_negative_numbers_are_the_lowest() {
        let a = Asks::of("At which times does the column reach its most negative values?");
        assert!(a.least && !a.most);
        let a = Asks::of("Which step has the most negative energy, and which the highest?");
        assert!(a.least && a.most);
    }

    #[test]
    fn question_words_name_the_answer() {
        let a = Asks::of("Which Kansas counties received the most expensive equipment?");
        assert!(a.most && !a.least);
        let a = Asks::of("When did the disk write spike occur on vda?");
        assert!(a.most && !a.least);
        let a = Asks::of("Did any SSH login succeed?");
        assert!(a.anomaly && !a.most);
        let a = Asks::of("How many tests failed, and why?");
        assert!(a.count && a.why);
        let a = Asks::of("What are the fastest endpoints?");
        assert!(a.least);
        // A measure at zero is the bottom of its ranking.
        let a = Asks::of("Which controllers have zero test coverage?");
        assert!(a.least && !a.most);
        let a = Asks::of("What does the orders table look like?");
        assert_eq!(a, Asks::default());
        assert!(Asks::of("the top hit for each query").each);
        assert!(Asks::of("requests per endpoint").each);
        assert!(
            !Asks::of("what happened to peach?").each,
            "a word, not a part of one"
        );
        let l = Asks::of("at which hit do the e-values stop being significant (above 0.001)?");
        assert_eq!(l.limit.map(|l| (l.above, l.value)), Some((true, 0.001)));
        let l = Limit::of("requests that took less than 5 ms").unwrap();
        assert!(!l.above && l.holds(4.0) && !l.holds(5.0));
        let l = Limit::of("pauses > 100ms").unwrap();
        assert_eq!((l.value, l.scaled), (100.0, 0.1));
        assert_eq!(Limit::of("over 500 ms").map(|l| l.scaled), Some(0.5));
        let l = Limit::of("Which orders took 899 ms or more?").unwrap();
        assert!(
            l.above && l.unit && l.holds(899.0) && !l.holds(898.0) && l.with(true).holds(0.899)
        );
        let l = Limit::of("files of at most 10 lines").unwrap();
        assert!(!l.above && l.holds(10.0) && !l.holds(11.0));
        assert!(Limit::of("latency >= 5").unwrap().holds(5.0));
        assert_eq!(Limit::strip("orders of 899 ms or more?"), "orders of ?");
        assert_eq!(Limit::of("which tests failed?"), None);
        assert_eq!(Limit::of("tests over budget"), None);
        assert_eq!(
            Limit::strip("requests over 500 ms on /api?"),
            "requests   on /api?"
        );
    }

    #[test]
    fn ranking_words_bring_measure_names() {
        let mut q = Query::new("Which requests were slowest?");
        add_measures(&mut q, "Which requests were slowest?");
        assert!(q.has(&stem("duration")) && q.has("ms"));
        let mut q = Query::new("the worst maximum latency");
        add_measures(&mut q, "the worst maximum latency");
        assert!(q.has("max") && !q.has("min"));
        let mut q = Query::new("most expensive equipment");
        add_measures(&mut q, "most expensive equipment");
        assert!(q.has(&stem("cost")));
    }
}
