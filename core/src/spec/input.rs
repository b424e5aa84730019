//! Raw spec input from exectl.yaml and flags, before validation. Every value remembers where it came from,
//! so that an error can name the flag or the file field.

pub use crate::spec_settings::{Origin, Raw, SpecInput};

use super::yaml_tree::{self, Kind, Node};
use crate::error::UsageError;
use crate::spec_settings::{self, Setting, SETTINGS};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// A YAML scalar of any type, kept as its text.
#[derive(Debug, Clone)]
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_norway::Value::deserialize(d)? {
            serde_norway::Value::String(s) => Ok(Scalar(s)),
            serde_norway::Value::Number(n) => Ok(Scalar(n.to_string())),
            serde_norway::Value::Bool(b) => Ok(Scalar(b.to_string())),
            other => Err(de::Error::custom(format!(
                "expected a single value, found {}",
                kind(&other)
            ))),
        }
    }
}

fn kind(v: &serde_norway::Value) -> &'static str {
    match v {
        serde_norway::Value::Null => "nothing",
        serde_norway::Value::Sequence(_) => "a list",
        serde_norway::Value::Mapping(_) => "a mapping",
        _ => "a tagged value",
    }
}

/// exectl.yaml as read: its single-value settings (rows of `SETTINGS`), `env:` and `images:`.
#[derive(Default)]
struct SpecFile {
    settings: Vec<(&'static Setting, Scalar)>,
    env: BTreeMap<String, Scalar>,
    images: BTreeMap<String, Scalar>,
}

/// Every top-level key, in the order an unknown-field error lists them.
const FIELDS: [&str; SETTINGS.len() + 2] = {
    let mut out = [""; SETTINGS.len() + 2];
    let mut i = 0;
    while i < SETTINGS.len() {
        out[i] = SETTINGS[i].key;
        i += 1;
    }
    out[i] = "env";
    out[i + 1] = "images";
    out
};

/// A top-level key of exectl.yaml. Read as the key itself so that serde_norway puts an unknown one at
/// its own line.
enum Field {
    Setting(&'static Setting),
    Env,
    Images,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
                match key {
                    "env" => Ok(Field::Env),
                    "images" => Ok(Field::Images),
                    _ => spec_settings::setting(key)
                        .map(Field::Setting)
                        .ok_or_else(|| E::unknown_field(key, &FIELDS)),
                }
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

impl<'de> Deserialize<'de> for SpecFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FileVisitor;
        impl<'de> Visitor<'de> for FileVisitor {
            type Value = SpecFile;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("struct SpecFile")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SpecFile, A::Error> {
                let mut file = SpecFile::default();
                let mut seen: Vec<&'static str> = Vec::new();
                while let Some(field) = map.next_key::<Field>()? {
                    let key = match &field {
                        Field::Setting(s) => s.key,
                        Field::Env => "env",
                        Field::Images => "images",
                    };
                    if seen.contains(&key) {
                        return Err(de::Error::duplicate_field(key));
                    }
                    seen.push(key);
                    match field {
                        Field::Setting(s) => {
                            if let Some(v) = map.next_value::<Option<Scalar>>()? {
                                file.settings.push((s, v));
                            }
                        }
                        Field::Env => file.env = map.next_value()?,
                        Field::Images => file.images = map.next_value()?,
                    }
                }
                Ok(file)
            }
        }
        d.deserialize_struct("SpecFile", &FIELDS, FileVisitor)
    }
}

/// An error at one line of a YAML file.
pub(crate) fn at_line(
    field: &str,
    path: &Path,
    line: usize,
    problem: String,
    fix: &str,
) -> UsageError {
    UsageError::new(field, format!("{}:{line}", path.display()), problem, fix)
}

/// A key given twice in one mapping is refused at its second line (serde would keep the last silently).
pub(crate) fn unique_keys(
    field: &str,
    path: &Path,
    prefix: &str,
    pairs: &[(Node, Node)],
) -> Result<(), UsageError> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, _) in pairs {
        let Some(name) = k.text() else { continue };
        if let Some(first) = seen.insert(name, k.line) {
            return Err(at_line(
                field,
                path,
                k.line,
                format!("{prefix}{name} is given twice (first on line {first})"),
                "keep one of them",
            ));
        }
    }
    Ok(())
}

/// `name: value` holds one value: refused at the key's line when it is empty, at the value's line when it
/// is a mapping or a list (`fixes` for each).
fn one_value(
    field: &str,
    path: &Path,
    name: &str,
    (k, v): (&Node, &Node),
    fixes: [&str; 2],
) -> Result<(), UsageError> {
    if v.is_null() {
        let problem = format!("{name} has no value");
        return Err(at_line(field, path, k.line, problem, fixes[0]));
    }
    if matches!(v.kind, Kind::Map(_) | Kind::Seq(_)) {
        let problem = format!("{name}: expected a single value, found {}", v.describe());
        return Err(at_line(field, path, v.line, problem, fixes[1]));
    }
    Ok(())
}

/// The entries of a `name: value` mapping (env:, images:, the --images file): unique keys, each with one
/// value; image keys known.
fn check_entries(
    field: &str,
    path: &Path,
    prefix: &str,
    pairs: &[(Node, Node)],
    images: bool,
) -> Result<(), UsageError> {
    unique_keys(field, path, prefix, pairs)?;
    for (k, v) in pairs {
        let name = k.text().unwrap_or("?");
        let fixes = ["give it a value, or remove the line", "give one value"];
        one_value(field, path, &format!("{prefix}{name}"), (k, v), fixes)?;
        if images && !super::resolve::IMAGE_KEYS.contains(&name) {
            return Err(at_line(
                field,
                path,
                k.line,
                format!("unknown image key {name:?}"),
                &format!("use one of {}", super::resolve::IMAGE_KEYS.join(", ")),
            ));
        }
    }
    Ok(())
}

/// exectl.yaml's shape, checked on the node tree so that each fault names its own line.
fn check_spec_shape(path: &Path, text: &str) -> Result<(), UsageError> {
    let Some(Node {
        kind: Kind::Map(pairs),
        ..
    }) = yaml_tree::parse(text)
    else {
        return Ok(()); // syntax errors and a top level that is not a mapping: serde_norway says so
    };
    let field = "spec file";
    unique_keys(field, path, "", &pairs)?;
    for (k, v) in &pairs {
        let Some(name) = k.text() else { continue };
        if name == "env" || name == "images" {
            match &v.kind {
                _ if v.is_null() => {}
                Kind::Map(entries) => {
                    check_entries(field, path, &format!("{name}."), entries, name == "images")?
                }
                _ => {
                    return Err(at_line(
                        field,
                        path,
                        v.line,
                        format!(
                            "{name}: expected a mapping of NAME: value, found {}",
                            v.describe()
                        ),
                        "write one `NAME: value` per line below it, indented",
                    ))
                }
            }
        } else if spec_settings::setting(name).is_some() {
            let fixes = [
                "give it a value, or remove the line to take the default",
                "give one value (fields are documented in README.md)",
            ];
            one_value(field, path, name, (k, v), fixes)?;
        }
    }
    Ok(())
}

/// `text` read as a `T`; a fault names `path` and, where serde_norway knows it, the line.
fn from_yaml<T: de::DeserializeOwned>(
    field: &str,
    path: &Path,
    text: &str,
    fix: &str,
) -> Result<T, UsageError> {
    serde_norway::from_str(text).map_err(|e| {
        let at = match e.location() {
            Some(l) => format!("{}:{}", path.display(), l.line()),
            None => path.display().to_string(),
        };
        UsageError::new(field, at, e.to_string(), fix)
    })
}

/// Parse exectl.yaml text. A syntax or shape error names the file, line and field.
pub fn parse_spec_file(path: &Path, text: &str) -> Result<SpecInput, UsageError> {
    let text = yaml_tree::without_bom(text);
    check_spec_shape(path, text)?;
    let file: SpecFile = if text.trim().is_empty() {
        SpecFile::default()
    } else {
        let fix = "correct that line of the file (fields are documented in README.md)";
        from_yaml("spec file", path, text, fix)?
    };
    let mut input = SpecInput::default();
    for (s, Scalar(value)) in file.settings {
        *(s.slot)(&mut input) = Some(Raw {
            value,
            origin: Origin::File {
                path: path.to_path_buf(),
                field: s.key,
            },
        });
    }
    Ok(SpecInput {
        secret_env: Vec::new(),
        env: file
            .env
            .into_iter()
            .map(|(k, Scalar(v))| Raw {
                value: format!("{k}={v}"),
                origin: Origin::File {
                    path: path.to_path_buf(),
                    field: "env",
                },
            })
            .collect(),
        images: file
            .images
            .into_iter()
            .map(|(k, Scalar(v))| {
                (
                    k,
                    Raw {
                        value: v,
                        origin: Origin::File {
                            path: path.to_path_buf(),
                            field: "images",
                        },
                    },
                )
            })
            .collect(),
        ..input
    })
}

/// An images file (`--images FILE`, read by the caller): a mapping of app/mariadb/postgres/redis/nginx/
/// traefik to references.
pub fn parse_images_file(path: &Path, text: &str) -> Result<Vec<(String, Raw)>, UsageError> {
    let text = yaml_tree::without_bom(text);
    if let Some(Node {
        kind: Kind::Map(pairs),
        ..
    }) = yaml_tree::parse(text)
    {
        check_entries("--images", path, "", &pairs, true)?;
    }
    let fix = "write a mapping such as `app: exectl-fixture/standin:latest`";
    let map: BTreeMap<String, Scalar> = from_yaml("--images", path, text, fix)?;
    Ok(map
        .into_iter()
        .map(|(k, Scalar(v))| (k, Raw::flag("--images", v)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_yaml_names_line() {
        let err =
            parse_spec_file(Path::new("exectl.yaml"), "stack: a\ninstances: [1\n").unwrap_err();
        assert!(err.value.starts_with("exectl.yaml:"), "{err}");
    }

    #[test]
    fn unknown_field_is_named() {
        let err = parse_spec_file(Path::new("x.yaml"), "stack: a\ninstancs: 3\n").unwrap_err();
        assert!(err.problem.contains("instancs"), "{err}");
        assert_eq!(err.value, "x.yaml:2");
    }

    #[test]
    fn every_setting_is_read_from_its_key() {
        let text: String = SETTINGS
            .iter()
            .map(|s| format!("{}: v-{}\n", s.key, s.key))
            .collect();
        let mut input = parse_spec_file(Path::new("x.yaml"), &text).unwrap();
        for s in SETTINGS {
            let r = (s.slot)(&mut input).take().unwrap();
            assert_eq!(r.value, format!("v-{}", s.key));
            let field = s.key;
            assert_eq!(
                r.origin,
                Origin::File {
                    path: "x.yaml".into(),
                    field
                }
            );
        }
    }

    #[test]
    fn flags_override_file() {
        let file = parse_spec_file(Path::new("x.yaml"), "stack: a\ninstances: 3\n").unwrap();
        let flags = SpecInput {
            instances: Some(Raw::flag("--instances", "4")),
            ..Default::default()
        };
        let merged = file.overridden_by(flags);
        assert_eq!(merged.instances.unwrap().value, "4");
        assert_eq!(merged.stack.unwrap().value, "a");
    }
}
