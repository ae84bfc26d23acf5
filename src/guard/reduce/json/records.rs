//! Which array of objects a JSON document lists as its records ([`records_of`]): the
//! largest within three object levels, unless it is one list of a map of lists or a few
//! objects in a large document.

use serde_json::Value;

/// Fewest keys of an object, each holding an array, for the object to be a map of lists
/// ([`find_records`]).
const MAP_OF_LISTS: usize = 8;

/// The largest array of objects within three object levels of `v` (its key path and items):
/// the records the document lists. The lists of a map keyed by name or version (PyPI's
/// `releases`: 163 versions, each a list of two or three files) are parts of one collection,
/// none of them the records: a list among [`MAP_OF_LISTS`] or more that holds under a quarter
/// of their items is not taken (its Status said "3 records at `.releases["2.23.0"]`", an
/// arbitrary old release).
fn find_records<'a>(
    v: &'a Value,
    path: &mut Vec<String>,
    best: &mut Option<(Vec<String>, &'a Vec<Value>)>,
    depth: usize,
) {
    match v {
        Value::Object(m)
            if depth < 3 && m.values().filter(|x| x.is_array()).count() >= MAP_OF_LISTS =>
        {
            let lists: Vec<usize> = m
                .values()
                .filter_map(|x| x.as_array().map(Vec::len))
                .collect();
            let total: usize = lists.iter().sum();
            for (k, x) in m {
                let part = x.as_array().is_some_and(|a| a.len() * 4 < total);
                if !part {
                    path.push(k.clone());
                    find_records(x, path, best, depth + 1);
                    path.pop();
                }
            }
        }
        Value::Array(a) => {
            let objs = a.iter().filter(|x| x.is_object()).count();
            if objs >= 2
                && objs * 2 >= a.len()
                && best.as_ref().is_none_or(|(_, b)| a.len() > b.len())
            {
                *best = Some((path.clone(), a));
            }
        }
        Value::Object(m) if depth < 3 => {
            for (k, x) in m {
                path.push(k.clone());
                find_records(x, path, best, depth + 1);
                path.pop();
            }
        }
        _ => {}
    }
}

pub(super) fn best_is_none(v: &Value, bytes: usize) -> bool {
    records_of(v, bytes).is_none()
}

/// Fewest records for an array that holds a small part of its document
/// ([`MINOR_RECORDS_PCT`]) to be what the document lists: two or three objects (a package's
/// `ownership.roles` in a 200 KB PyPI page) are a detail of it, and a Status that names them
/// describes the document by the wrong part.
const MIN_RECORDS: usize = 4;

/// Share of a document's bytes (percent) under which few records are a detail of it.
const MINOR_RECORDS_PCT: usize = 10;

/// The records of `v` ([`find_records`]; `bytes`, the document's size), unless they are fewer
/// than [`MIN_RECORDS`] and hold under [`MINOR_RECORDS_PCT`] percent of it.
pub(super) fn records_of(v: &Value, bytes: usize) -> Option<(Vec<String>, &Vec<Value>)> {
    let mut best = None;
    find_records(v, &mut Vec::new(), &mut best, 0);
    best.filter(|(_, a)| {
        a.len() >= MIN_RECORDS
            || serde_json::to_string(a).map_or(0, |t| t.len()) * 100 >= bytes * MINOR_RECORDS_PCT
    })
}

/// True when `v` holds, within three object levels, a map of records ([`map_of_records`]:
/// checksec's binaries by path, npm's packages by name): its members are records the units
/// rank, not leaves to rank one by one.
///
/// [`map_of_records`]: crate::guard::reduce::units::map_of_records
pub(super) fn has_map_of_records(v: &Value, depth: usize) -> bool {
    match v {
        Value::Object(m) if crate::guard::reduce::units::map_of_records(m) => true,
        Value::Object(m) if depth < 3 => m.values().any(|x| has_map_of_records(x, depth + 1)),
        _ => false,
    }
}

/// The lists of a map of lists, each by its key.
pub(super) type Lists<'v> = Vec<(&'v str, &'v Vec<Value>)>;

/// The first map of lists within three object levels of `v` ([`map_of_lists`]: detect-secrets'
/// `results`, findings by file): its key path and its lists, each by its key. Its lists are
/// parts of one collection, which [`records_of`] does not take for records.
///
/// [`map_of_lists`]: crate::guard::reduce::units::map_of_lists
pub(super) fn lists_of(v: &Value, depth: usize) -> Option<(Vec<String>, Lists<'_>)> {
    let Value::Object(m) = v else { return None };
    if crate::guard::reduce::units::map_of_lists(m) {
        let lists = m
            .iter()
            .filter_map(|(k, x)| Some((k.as_str(), x.as_array()?)))
            .collect();
        return Some((Vec::new(), lists));
    }
    if depth >= 3 {
        return None;
    }
    m.iter().find_map(|(k, x)| {
        let (mut path, lists) = lists_of(x, depth + 1)?;
        path.insert(0, k.clone());
        Some((path, lists))
    })
}
