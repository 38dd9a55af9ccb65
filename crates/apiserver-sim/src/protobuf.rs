//! Just enough of the Kubernetes protobuf encoding to accept the create bodies `kubectl` sends
//! that way (`kubectl create namespace`, `kubectl create secret`): the `k8s\0` envelope, the
//! `runtime.Unknown` wrapper, and the metadata, data and flags of a Namespace or Secret.
//!
//! Layer: pure decoding into the JSON shape the rest of the simulator reads. Anything it does not
//! understand is an error (answered 415), never a guess. It must not grow into a general protobuf
//! codec: pods and every answer stay JSON.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The media type of the Kubernetes protobuf encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

/// One protobuf field: its number and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or(DecodeError("truncated varint"))?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError("varint too long"))
}

/// Splits a message into its fields, in order.
fn fields(buf: &[u8]) -> Result<Vec<(u64, Field<'_>)>, DecodeError> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let (number, wire) = (key >> 3, key & 7);
        let field = match wire {
            0 => Field::Varint(varint(buf, &mut pos)?),
            1 | 5 => {
                let width = if wire == 1 { 8 } else { 4 };
                pos = pos
                    .checked_add(width)
                    .filter(|p| *p <= buf.len())
                    .ok_or(DecodeError("truncated fixed field"))?;
                Field::Fixed
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?)
                    .map_err(|_| DecodeError("length overflow"))?;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= buf.len())
                    .ok_or(DecodeError("truncated field"))?;
                let bytes = &buf[pos..end];
                pos = end;
                Field::Bytes(bytes)
            }
            _ => return Err(DecodeError("unsupported wire type")),
        };
        out.push((number, field));
    }
    Ok(out)
}

fn text(bytes: &[u8]) -> Result<String, DecodeError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError("string is not UTF-8"))
}

/// A map entry message (key = field 1, value = field 2).
fn entry(bytes: &[u8]) -> Result<(String, Vec<u8>), DecodeError> {
    let mut key = String::new();
    let mut value = Vec::new();
    for (n, f) in fields(bytes)? {
        match (n, f) {
            (1, Field::Bytes(b)) => key = text(b)?,
            (2, Field::Bytes(b)) => value = b.to_vec(),
            _ => {}
        }
    }
    Ok((key, value))
}

fn string_map(map: &BTreeMap<String, Vec<u8>>) -> Result<Value, DecodeError> {
    let mut out = Map::new();
    for (k, v) in map {
        out.insert(k.clone(), Value::String(text(v)?));
    }
    Ok(Value::Object(out))
}

/// The parts of `ObjectMeta` a create may carry: name, generateName, namespace, labels,
/// annotations.
fn object_meta(bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut meta = Map::new();
    let mut labels = BTreeMap::new();
    let mut annotations = BTreeMap::new();
    for (n, f) in fields(bytes)? {
        match (n, f) {
            (1, Field::Bytes(b)) => {
                meta.insert("name".into(), Value::String(text(b)?));
            }
            (2, Field::Bytes(b)) => {
                meta.insert("generateName".into(), Value::String(text(b)?));
            }
            (3, Field::Bytes(b)) => {
                meta.insert("namespace".into(), Value::String(text(b)?));
            }
            (11, Field::Bytes(b)) => {
                let (k, v) = entry(b)?;
                labels.insert(k, v);
            }
            (12, Field::Bytes(b)) => {
                let (k, v) = entry(b)?;
                annotations.insert(k, v);
            }
            _ => {}
        }
    }
    if !labels.is_empty() {
        meta.insert("labels".into(), string_map(&labels)?);
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), string_map(&annotations)?);
    }
    Ok(Value::Object(meta))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes a protobuf-encoded Namespace or Secret create body into its JSON form.
///
/// # Errors
///
/// A [`DecodeError`] when the envelope is missing, the kind is not `Namespace` or `Secret`, or the
/// message is malformed.
pub fn decode_object(body: &[u8]) -> Result<Value, DecodeError> {
    let unknown = body
        .strip_prefix(MAGIC)
        .ok_or(DecodeError("missing k8s protobuf envelope"))?;
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for (n, f) in fields(unknown)? {
        match (n, f) {
            (1, Field::Bytes(type_meta)) => {
                for (m, g) in fields(type_meta)? {
                    if let (2, Field::Bytes(k)) = (m, g) {
                        kind = text(k)?;
                    }
                }
            }
            (2, Field::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    let mut object = json!({ "apiVersion": "v1", "kind": kind });
    match kind.as_str() {
        "Namespace" => {
            for (n, f) in fields(raw)? {
                if let (1, Field::Bytes(m)) = (n, f) {
                    object["metadata"] = object_meta(m)?;
                }
            }
        }
        "Secret" => {
            let mut data = Map::new();
            let mut string_data = BTreeMap::new();
            for (n, f) in fields(raw)? {
                match (n, f) {
                    (1, Field::Bytes(m)) => object["metadata"] = object_meta(m)?,
                    (2, Field::Bytes(e)) => {
                        let (k, v) = entry(e)?;
                        data.insert(k, Value::String(base64(&v)));
                    }
                    (3, Field::Bytes(t)) => object["type"] = Value::String(text(t)?),
                    (4, Field::Bytes(e)) => {
                        let (k, v) = entry(e)?;
                        string_data.insert(k, v);
                    }
                    (5, Field::Varint(v)) => object["immutable"] = Value::Bool(v != 0),
                    _ => {}
                }
            }
            if !data.is_empty() {
                object["data"] = Value::Object(data);
            }
            if !string_data.is_empty() {
                object["stringData"] = string_map(&string_data)?;
            }
        }
        _ => {
            return Err(DecodeError(
                "only Namespace and Secret bodies are accepted as protobuf",
            ));
        }
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::try_from(n << 3 | 2).expect("small field number")];
        out.push(u8::try_from(bytes.len()).expect("short field"));
        out.extend_from_slice(bytes);
        out
    }

    fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, b"v1"), field(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), field(1, &type_meta), field(2, raw)].concat()
    }

    /// The body `kubectl create namespace agents` sends decodes to the namespace's name.
    #[test]
    fn decodes_a_namespace() {
        let meta = [
            field(1, b"agents"),
            field(11, &[field(1, b"team"), field(2, b"a")].concat()),
        ]
        .concat();
        let body = envelope("Namespace", &field(1, &meta));
        let v = decode_object(&body).expect("decodes");
        assert_eq!(v["kind"], "Namespace");
        assert_eq!(v["metadata"]["name"], "agents");
        assert_eq!(v["metadata"]["labels"]["team"], "a");
    }

    /// A Secret's data (base64 in JSON), type and immutable flag survive decoding.
    #[test]
    fn decodes_a_secret() {
        let raw = [
            field(1, &field(1, b"s")),
            field(2, &[field(1, b"K"), field(2, b"hunter2")].concat()),
            field(3, b"Opaque"),
            vec![5 << 3, 1],
        ]
        .concat();
        let v = decode_object(&envelope("Secret", &raw)).expect("decodes");
        assert_eq!(v["metadata"]["name"], "s");
        assert_eq!(v["data"]["K"], "aHVudGVyMg==");
        assert_eq!(v["type"], "Opaque");
        assert_eq!(v["immutable"], true);
    }

    /// Other kinds, missing envelopes and truncated messages are refused, never guessed.
    #[test]
    fn refuses_what_it_does_not_understand() {
        assert!(decode_object(b"{\"kind\":\"Namespace\"}").is_err());
        assert!(decode_object(&envelope("Pod", &field(1, &field(1, b"p")))).is_err());
        let mut truncated = envelope("Namespace", &field(1, &field(1, b"agents")));
        truncated.truncate(truncated.len() - 2);
        assert!(decode_object(&truncated).is_err());
    }

    /// Base64 padding at every remainder length.
    #[test]
    fn base64_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }
}
