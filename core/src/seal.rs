//! A results.json's seal: each top-level field's fingerprint (and each item's of one list field:
//! `points.3`, `rows.2`), written into the file itself (`fingerprints`). A resume reads the file
//! back, fingerprints it again and refuses one changed since, naming what changed: an edited figure
//! would otherwise be resumed and reported as measured. One mechanism for a sweep's and a campaign's
//! results.

use std::collections::BTreeMap;

use serde::Serialize;

/// The field that holds the seal (never fingerprinted itself).
const FIELD: &str = "fingerprints";

/// Results that carry their own seal.
pub trait Sealed: Serialize {
    /// The list field whose items are fingerprinted one by one (`points`, `rows`).
    const ITEMS: &'static str;
    fn fingerprints(&self) -> &BTreeMap<String, String>;
    fn fingerprints_mut(&mut self) -> &mut BTreeMap<String, String>;

    /// Each field's fingerprint as the results are now (`ITEMS` one per item: `points.3`).
    fn prints(&self) -> BTreeMap<String, String> {
        let doc = serde_json::to_value(self).expect("results serialise");
        prints(&doc, Self::ITEMS)
    }

    /// The fingerprints set to what the results are now (each write does it).
    fn seal(&mut self) {
        *self.fingerprints_mut() = self.prints();
    }

    /// What was changed since the results were last sealed: each field (or item) whose fingerprint
    /// differs, was dropped or was added. Empty for the file as exectl wrote it.
    fn edited(&self) -> Vec<String> {
        edited(&self.prints(), self.fingerprints(), Self::ITEMS)
    }
}

/// The fingerprints of a document's top-level fields, the items of `items` one by one.
pub fn prints(doc: &serde_json::Value, items: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(fields) = doc.as_object() else {
        return out;
    };
    for (key, value) in fields {
        match (key.as_str(), value) {
            (FIELD, _) => {}
            (k, serde_json::Value::Array(list)) if k == items => {
                for (i, item) in list.iter().enumerate() {
                    let k = format!("{items}.{}", i + 1);
                    out.insert(k.clone(), fingerprint(&k, item));
                }
            }
            _ => {
                out.insert(key.clone(), fingerprint(key, value));
            }
        }
    }
    out
}

/// The keys whose fingerprint is not the sealed one (or is on one side only), items in their order
/// (`points.2` before `points.10`) after the other fields.
pub fn edited(
    now: &BTreeMap<String, String>,
    sealed: &BTreeMap<String, String>,
    items: &str,
) -> Vec<String> {
    let mut keys: Vec<&String> = now.keys().chain(sealed.keys()).collect();
    let prefix = format!("{items}.");
    keys.sort_by_key(|k| {
        let n = k
            .strip_prefix(&prefix)
            .and_then(|n| n.parse::<usize>().ok());
        (n.is_some(), n, k.as_str())
    });
    keys.dedup();
    keys.into_iter()
        .filter(|k| now.get(*k) != sealed.get(*k))
        .cloned()
        .collect()
}

/// A field's fingerprint: sha256 over its name and its JSON, each float at 9 significant digits (a
/// float read back from JSON may differ from the one written in its last bit, and must not count as
/// an edit).
pub fn fingerprint(key: &str, value: &serde_json::Value) -> String {
    use sha2::{Digest, Sha256};
    fn canonical(v: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::Number(n) if n.is_f64() => {
                Value::String(format!("{:.8e}", n.as_f64().unwrap_or_default()))
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), canonical(v))).collect())
            }
            other => other.clone(),
        }
    }
    let digest = Sha256::digest(format!("{key}\0{}", canonical(value)));
    format!("sha256:{}", &hex::encode(digest)[..16])
}
