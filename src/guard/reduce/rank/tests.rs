//! Unit tests of [`super`]: query terms, stems, BM25.

use super::*;

#[test]
fn a_field_word_is_named_by_a_query_term_it_shares_a_prefix_with() {
    let q = Query::new("which repositories have the most stars, and how much memory?");
    assert!(q.names_word("stargazers"));
    assert!(q.names_word("mem"));
    assert!(q.names_word(&stem("memory")));
    // Too short to be a prefix, or unrelated.
    assert!(!q.names_word("st"));
    assert!(!q.names_word("forks"));
    assert!(!q.names_word("id"));
}

#[test]
fn allocations_name_malloc_fields() {
    let q = Query::new("which line is responsible for the memory allocations?");
    assert!(
        q.names_word("mallocs") && q.names_word("malloc"),
        "{:?}",
        q.terms
    );
}

#[test]
fn a_query_language_operator_in_capitals_negates_nothing() {
    let q = Query::new("Which plan does the engine expect for a NOT IN subquery?");
    assert!(q.has("subqueri"), "{:?}", q.terms);
    assert!(q.negated.is_empty());
    // The same words in lower case negate.
    let q = Query::new("which plans are not in a subquery?");
    assert_eq!(q.negated, vec!["subqueri".to_string()]);
    // A question all in capitals shouts every word: its NOT still negates.
    let q = Query::new("WHICH HOSTS ARE NOT REACHABLE?");
    assert_eq!(q.negated, vec!["reachabl".to_string()]);
}

#[test]
fn a_negated_word_is_not_a_query_term() {
    let q = Query::new("Which BGP neighbors are not Established, and what state are they in?");
    assert!(!q.has(&stem("established")));
    assert!(q.has(&stem("neighbors")) && q.has("bgp"));
    assert!(!q.names.iter().any(|n| n == "established"));
    let q = Query::new("Which events were above non-emergency?");
    assert!(!q.has(&stem("emergency")) && q.has(&stem("events")));
    let q = Query::new("Which tests didn't pass?");
    assert!(!q.has(&stem("pass")));
    // "no" is not a negation of the word after it: "no errors?" asks about errors.
    let q = Query::new("Are there no errors?");
    assert!(q.has(&stem("errors")));
}

#[test]
fn synonyms_meet_the_output_as_tokens_are_stemmed() {
    // `healthy` and its synonyms `ready` and `status` end in letters the stemmer changes.
    let q = Query::new("Is the deployment healthy?");
    let words = tokenize("readyReplicas: 2, status: ok");
    assert!(
        words.iter().any(|w| q.has(w) && w.starts_with("read")),
        "{words:?}"
    );
    assert!(
        words.iter().any(|w| q.has(w) && w.starts_with("statu")),
        "{words:?}"
    );
}

#[test]
fn the_state_of_the_rest_is_what_the_answer_is_not() {
    let q = Query::new("Which ports are operationally up (the rest being down)?");
    assert_eq!(q.negated, vec![stem("down")]);
    assert!(q.has("up") && !q.has(&stem("down")));
    let q = Query::new("Which jobs passed, the others failed?");
    assert_eq!(q.negated, vec![stem("failed")]);
    // "the rest of the log" gives the rest no state.
    let q = Query::new("What does the rest of the log say about the timeout?");
    assert!(q.negated.is_empty());
    // Without "the", "rest" is a word of the question (a REST API).
    let q = Query::new("Which rest endpoints failed?");
    assert!(q.negated.is_empty() && q.has(&stem("failed")));
}

#[test]
fn stems_match_common_forms() {
    assert_eq!(stem("failed"), stem("fails"));
    assert_eq!(stem("failure"), "fail");
    assert_eq!(stem("matrices"), stem("matrix"));
    assert_eq!(stem("partitioned"), stem("partition"));
    assert_eq!(stem("licenses"), stem("license"));
    assert_eq!(stem("values"), stem("value"));
    assert_eq!(stem("vulnerabilities"), stem("vulnerability"));
    assert_eq!(stem("copied"), stem("copy"));
}

#[test]
fn a_term_on_nearly_every_line_tells_no_line_apart() {
    // `id` and `length` are on every frame of a CAN log: plain BM25 still ranks the
    // shortest frames first; without the ubiquitous terms only the rare word scores.
    let q = Query::new("Which ids appear and what length does each use? any overrun?");
    let mut docs: Vec<String> = (0..30)
        .map(|i| format!("{i}.0 Rx d {} Length = 0 ID = {}", i % 4, 100 + i % 3))
        .collect();
    docs.push("31.0 Rx d 8 00 11 22 33 44 55 66 77 Length = 0 ID = 7 overrun".into());
    let plain = bm25(&q, &docs);
    assert!(plain[0] > 0.0);
    let s = bm25_discriminating(&q, &docs);
    assert!(s[..30].iter().all(|&x| x == 0.0), "{s:?}");
    assert!(s[30] > 0.0);
    // Few documents: nothing is judged ubiquitous.
    assert!(bm25_discriminating(&q, &docs[..5])[0] > 0.0);
}

#[test]
fn bm25_prefers_matching_lines() {
    let q = Query::new("which versions of openssl are installed?");
    let docs = [
        "ii  openssl 1.1.1 amd64 toolkit",
        "ii  zlib1g 1:1.2 amd64 compression",
        "",
    ];
    let s = bm25(&q, &docs);
    assert!(s[0] > 0.0);
    assert_eq!(s[1], 0.0);
    assert_eq!(s[2], 0.0);
}

#[test]
fn joined_words_match_their_parts() {
    assert!(tokenize("<spotPrice>1.1</spotPrice>").contains(&stem("price")));
    assert!(tokenize("x_rate_limit").contains(&"limit".to_string()));
    // An acronym inside a joined word ends before its last capital.
    let t = tokenize("'pDBPassword' HTTPServer");
    assert!(t.contains(&stem("password")) && t.contains(&"db".to_string()));
    assert!(t.contains(&stem("server")) && t.contains(&"http".to_string()));
    let q = Query::new("how much rate limit is left?");
    assert!(q.has("ratelimit"));
    let s = bm25(
        &q,
        &[
            "('x-ratelimit-remaining', '4969')",
            "('content-type', 'json')",
        ],
    );
    assert!(s[0] > s[1]);
}

#[test]
fn synonyms_expand_intent() {
    let q = Query::new("Why did the build fail?");
    assert!(q.has("error"));
    assert!(!q.has("the"));
}

#[test]
fn a_verb_opening_a_sentence_to_ask_for_the_form_is_not_a_term() {
    let q = Query::new("Why did this CI run fail? Name the failing step, file and error.");
    assert!(!q.has(&stem("name")), "{:?}", q.terms);
    assert!(q.has(&stem("step")) && q.has(&stem("error")));
    // Inside a sentence, or joined by a dot to another word, the word is what is asked about.
    assert!(Query::new("Which pod name restarts most?").has(&stem("name")));
    assert!(Query::new("Where is file.name set?").has(&stem("name")));
    assert!(Query::new("Give the totals.\n- Quote the error").has(&stem("total")));
    let q = Query::new("Give the totals.\n- Quote the error");
    assert!(!q.has(&stem("give")) && !q.has(&stem("quot")) && !q.has(&stem("quote")));
}

#[test]
fn a_stopword_is_dropped_in_its_stemmed_form_too() {
    // "this" tokenizes as `thi`, "file" as `fil`, "where" as `wher`: none is a query term.
    let q = Query::new("Why did this CI run fail, and where is the file?");
    for w in ["this", "file", "where"] {
        assert!(!q.has(&stem(w)), "{w}: {:?}", q.terms);
    }
    assert!(q.has("ci"));
}

#[test]
fn a_clock_time_the_question_writes_is_the_minute_asked_about() {
    assert_eq!(
        clocks_in("around 11:02, or 9:05:17?"),
        vec!["11:02", "09:05"]
    );
    // Minutes and seconds after the hour, a version, a port: no clock time of their own.
    assert_eq!(clocks_in("took 00:11:02"), vec!["00:11"]);
    assert!(clocks_in("v1.11:02x; 10.0.0.1:8080").is_empty());
    let q = Query::new("Why did node b drop out around 11:02?");
    assert_eq!(q.clocks, vec!["11:02"]);
    // The hour and minute are not numbers to match on their own.
    assert!(!q.has("11") && !q.has("02"));
    let docs = [
        "Apr 03 10:58:01 node b drop: retry 11 of 02",
        "Apr 03 11:02:47 node b drop: shutdown requested",
        "Apr 03 11:03:30 node b rejoined",
    ];
    let s = bm25(&q, &docs);
    assert!(s[1] > s[0] && s[1] > s[2], "{s:?}");
}

#[test]
fn the_words_a_question_calls_keys() {
    let keys = |q: &str| Query::new(q).keys;
    assert_eq!(
        keys("Which node types have a 'decorator' field?"),
        ["decorator"]
    );
    assert_eq!(
        keys("Is the key `reboot_required` set anywhere?"),
        ["reboot_required"]
    );
    assert_eq!(
        keys("which records carry the deprecated attribute"),
        ["deprecated"]
    );
    assert!(keys("Which tests failed, and why?").is_empty());
    // A stopword beside the noun names no key.
    assert!(keys("Which of the fields are empty?").is_empty());
}

#[test]
fn a_place_asked_for_is_no_query_term() {
    for q in [
        "Which undefined names does pyflakes report, with file and line?",
        "List the paths and line numbers of the failures",
        "which undefined names, with their line number?",
        "undefined names (file:line:column)",
    ] {
        let q = Query::new(q);
        assert!(!q.has(&stem("line")) && !q.has(&stem("number")), "{q:?}");
        assert!(q.has("undefin") || q.has("failur"), "{q:?}");
    }
    // "line" that names a thing stays.
    assert!(Query::new("which interfaces have the line protocol down?").has(&stem("line")));
    assert!(Query::new("Which line of testme.py uses the most CPU?").has(&stem("line")));
}

#[test]
fn phrases_run_between_punctuation_and_stopwords() {
    let q = Query::new("the defaults of max connections, InnoDB buffer pool and log file size?");
    let want: Vec<Vec<String>> = vec![
        vec!["max".into(), "connect".into()],
        vec!["innodb".into(), "buffer".into(), "pool".into()],
    ];
    // `file` is a stopword (too common in questions to rank by): it breaks `log file size`.
    assert_eq!(q.phrases, want);
    let q = Query::new("what are bind-address and the log buffer size");
    assert_eq!(
        q.phrases,
        vec![
            vec!["bind".to_string(), "address".into()],
            vec!["log".into(), "buffer".into(), "siz".into()],
        ]
    );
}
