//! A game event's metadata on NATS — its version, when game-session published it, and
//! whether it ended the game — in one of two forms, which every gateway of this release
//! reads:
//!
//! - [`EventMetadata::Headers`]: NATS headers (`Frontier-Version`, `Frontier-Published-At`,
//!   `Frontier-Ended`), the form of every earlier release;
//! - [`EventMetadata::Payload`]: an [`Envelope`] of [`Envelope::LEN`] bytes in front of the
//!   frame, and no headers unless a trace context goes with the event. A header map is
//!   built, serialised, parsed and looked up per message on both sides; the envelope is
//!   three fixed-width numbers (issue 29).
//!
//! A frame is JSON text, whose first byte is never [`Envelope::MARK`]: a payload that
//! starts with it is an envelope, anything else a bare frame with its metadata in headers.
//! A gateway of an earlier release would relay the envelope's bytes to its clients, so
//! game-session writes the payload form only when told to (`--event-metadata payload`),
//! once every gateway runs this release or a later one.

use bytes::{BufMut as _, Bytes, BytesMut};

/// Where game-session puts a game event's metadata (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum EventMetadata {
    /// NATS headers: what every release reads.
    #[default]
    Headers,
    /// In front of the frame, in the payload: read by this release and later ones.
    Payload,
}

/// A game event's metadata, as carried in front of its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// The version the event produced.
    pub version: u64,
    /// When game-session published it, Unix µs (the gateway's `relay` stage).
    pub published_at_us: u64,
    /// It ended the game.
    pub ended: bool,
}

impl Envelope {
    /// The first byte of an enveloped payload (and the envelope's form, should it change).
    pub const MARK: u8 = 0x01;
    /// The envelope's length: the mark, the version and the publication time (each
    /// 8 bytes, little-endian) and a byte of flags (bit 0: ended; others ignored).
    pub const LEN: usize = 18;

    /// `frame` with this envelope in front of it.
    pub fn wrap(&self, frame: &[u8]) -> Bytes {
        let mut out = BytesMut::with_capacity(Self::LEN + frame.len());
        out.put_u8(Self::MARK);
        out.put_u64_le(self.version);
        out.put_u64_le(self.published_at_us);
        out.put_u8(u8::from(self.ended));
        out.put_slice(frame);
        out.freeze()
    }

    /// The envelope in front of `payload` and the frame after it (shared, not copied);
    /// none when the payload does not start with a whole envelope (a bare frame, whose
    /// metadata is in headers).
    pub fn open(payload: &Bytes) -> Option<(Envelope, Bytes)> {
        let head: &[u8; Self::LEN] = payload.get(..Self::LEN)?.try_into().ok()?;
        if head[0] != Self::MARK {
            return None;
        }
        let number = |at: usize| {
            let mut bytes = [0; 8];
            bytes.copy_from_slice(&head[at..at + 8]);
            u64::from_le_bytes(bytes)
        };
        let envelope = Envelope {
            version: number(1),
            published_at_us: number(9),
            ended: head[17] & 1 == 1,
        };
        Some((envelope, payload.slice(Self::LEN..)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_opens_to_what_was_wrapped_and_a_bare_frame_is_not_one() {
        let frame = br#"{"type":"event","version":7}"#;
        for ended in [false, true] {
            let envelope = Envelope {
                version: 0x0102_0304_0506_0708,
                published_at_us: 1_765_000_000_123_456,
                ended,
            };
            let payload = envelope.wrap(frame);
            assert_eq!(payload.len(), Envelope::LEN + frame.len());
            let (opened, rest) = Envelope::open(&payload).expect("an envelope");
            assert_eq!(opened, envelope);
            assert_eq!(&rest[..], &frame[..]);
        }
        // A bare JSON frame, a payload too short for an envelope, and an empty one.
        assert_eq!(Envelope::open(&Bytes::from_static(frame)), None);
        let short = Envelope {
            version: 1,
            published_at_us: 2,
            ended: false,
        }
        .wrap(b"");
        assert_eq!(Envelope::open(&short.slice(..Envelope::LEN - 1)), None);
        assert_eq!(Envelope::open(&Bytes::new()), None);
        // An envelope around an empty frame is still one.
        assert_eq!(
            Envelope::open(&short).map(|(e, rest)| (e.version, rest.len())),
            Some((1, 0))
        );
    }
}
