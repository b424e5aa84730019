//! Frame classification, as the app's `message-parser.ts`: asset messages (JSON with a known `type`) versus
//! Yjs updates (any other binary frame, relayed verbatim and never decoded).

/// The app's ASSET_MESSAGE_TYPES (its AssetCoordinator's list) plus `trigger-resync`, which the contract
/// lists with them.
pub const ASSET_MESSAGE_TYPES: [&str; 8] = [
    "awareness-update",
    "request-asset",
    "asset-uploaded",
    "prefetch-progress",
    "bulk-upload-progress",
    "priority-update",
    "navigation-hint",
    "trigger-resync",
];

/// Prefix byte that marks a binary asset message (Yjs messages start with 0, 1 or 2).
pub const ASSET_PREFIX: u8 = 0xFF;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Yjs,
    Asset,
    Ignored,
}

impl Kind {
    /// The `messageType` of the Redis envelope.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Asset => "asset",
            _ => "yjs",
        }
    }
}

fn is_asset_json(json: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(borrow, rename = "type")]
        kind: Option<&'a str>,
    }
    serde_json::from_slice::<Typed>(json)
        .ok()
        .and_then(|t| t.kind)
        .is_some_and(|k| ASSET_MESSAGE_TYPES.contains(&k))
}

pub fn classify_text(text: &str) -> Kind {
    if text.starts_with('{') && is_asset_json(text.as_bytes()) {
        Kind::Asset
    } else {
        Kind::Ignored
    }
}

pub fn classify_binary(data: &[u8]) -> Kind {
    let json = match data.first() {
        Some(&ASSET_PREFIX) => &data[1..],
        Some(b'{') => data, // legacy: JSON sent as a binary frame
        _ => return Kind::Yjs,
    };
    if is_asset_json(json) {
        Kind::Asset
    } else {
        Kind::Yjs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_like_the_app() {
        assert_eq!(classify_binary(&[0, 1, 2, 3]), Kind::Yjs);
        assert_eq!(classify_binary(&[]), Kind::Yjs);
        let mut asset = vec![0xFF];
        asset.extend_from_slice(br#"{"type":"awareness-update","data":{}}"#);
        assert_eq!(classify_binary(&asset), Kind::Asset);
        assert_eq!(classify_binary(br#"{"type":"request-asset"}"#), Kind::Asset);
        assert_eq!(classify_binary(br#"{"type":"other"}"#), Kind::Yjs);
        assert_eq!(classify_text(r#"{"type":"asset-uploaded"}"#), Kind::Asset);
        assert_eq!(classify_text(r#"{"type":"chat"}"#), Kind::Ignored);
        assert_eq!(classify_text("hello"), Kind::Ignored);
    }
}
