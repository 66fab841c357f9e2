//! Hidden chess secrets: the shuffled layout, its provably fair commitment, and the
//! server's full state (public position + layout).
//!
//! Architecture Invariant: a true identity lives only in a [`Layout`]. A `Layout` has no
//! public accessor for a single identity, no `Display`, and a `Debug` that prints nothing
//! secret. Identities leave it only through (a) `crate::game::Game::view` and
//! `crate::game::MoveReport::for_audience`, which hand each audience exactly what RULES.md
//! §2 entitles it to; (b) [`Shuffle::publish`], which needs the game to be over; and (c)
//! [`HiddenState::server_fen`], the server's own storage notation, named as such.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::board::{hidden_start_squares, start_role};
use crate::fen::{FenError, PositionError, Setup, check_material};
use crate::position::{Move, MoveKind, Position, Variant};
use crate::types::{Color, Piece, Role, Square};

/// The fifteen identities each side shuffles.
const IDENTITIES: [Role; 15] = [
    Role::Pawn,
    Role::Pawn,
    Role::Pawn,
    Role::Pawn,
    Role::Pawn,
    Role::Pawn,
    Role::Pawn,
    Role::Pawn,
    Role::Knight,
    Role::Knight,
    Role::Bishop,
    Role::Bishop,
    Role::Rook,
    Role::Rook,
    Role::Queen,
];

/// Prefix of the canonical encoding hashed into a commitment.
pub const COMMITMENT_DOMAIN: &str = "frontier/hidden-layout/v1:";

/// The operating system's random source failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the operating system's secure random source failed: {0}")]
pub struct RandomError(String);

/// Why a layout string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Not `15 letters / 15 letters`.
    #[error("a layout is 15 upper-case letters, `/`, 15 lower-case letters")]
    Shape,
    /// A side's letters are not 8 pawns, 2 knights, 2 bishops, 2 rooks and a queen.
    #[error("{}'s identities must be 8 pawns, 2 knights, 2 bishops, 2 rooks and 1 queen", .0.name())]
    Composition(Color),
}

/// True identities of hidden pieces, by start square. Secret: see the module docs.
#[derive(Clone, PartialEq, Eq)]
pub struct Layout {
    roles: [Option<Role>; 64],
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Layout(<secret>)")
    }
}

impl Layout {
    /// The unshuffled layout: every piece is what it looks like.
    pub fn unshuffled() -> Layout {
        let mut roles = [None; 64];
        for color in Color::ALL {
            for sq in hidden_start_squares(color) {
                roles[sq.idx()] = start_role(sq);
            }
        }
        Layout { roles }
    }

    /// A uniformly random layout from the operating system's secure random source,
    /// shuffled independently for each side (Fisher–Yates with rejection sampling).
    pub fn random() -> Result<Layout, RandomError> {
        let mut roles = [None; 64];
        for color in Color::ALL {
            let mut ids = IDENTITIES;
            for i in (1..ids.len()).rev() {
                let j = uniform_below(i as u32 + 1)? as usize;
                ids.swap(i, j);
            }
            for (sq, role) in hidden_start_squares(color).into_iter().zip(ids) {
                roles[sq.idx()] = Some(role);
            }
        }
        Ok(Layout { roles })
    }

    /// Parses the canonical string (see [`Layout::canonical`]).
    pub fn from_canonical(s: &str) -> Result<Layout, LayoutError> {
        let (white, black) = s.split_once('/').ok_or(LayoutError::Shape)?;
        let mut roles = [None; 64];
        for (color, part) in [(Color::White, white), (Color::Black, black)] {
            if part.len() != 15 || !part.is_ascii() {
                return Err(LayoutError::Shape);
            }
            let mut counts = [0u8; 6];
            for (sq, c) in hidden_start_squares(color).into_iter().zip(part.chars()) {
                let piece = Piece::from_char(c).ok_or(LayoutError::Shape)?;
                if piece.color != color {
                    return Err(LayoutError::Shape);
                }
                counts[piece.role as usize] += 1;
                roles[sq.idx()] = Some(piece.role);
            }
            if counts != [8, 2, 2, 2, 1, 0] {
                return Err(LayoutError::Composition(color));
            }
        }
        Ok(Layout { roles })
    }

    /// The canonical encoding: White's 15 identities as upper-case letters in the order
    /// a1 b1 c1 d1 f1 g1 h1 a2 … h2, then `/`, then Black's as lower-case letters in the
    /// order a8 b8 c8 d8 f8 g8 h8 a7 … h7. Example (unshuffled):
    /// `RNBQBNRPPPPPPPP/rnbqbnrpppppppp`. Secret until the game is over.
    pub(crate) fn canonical(&self) -> String {
        let mut out = String::with_capacity(31);
        for color in Color::ALL {
            if color == Color::Black {
                out.push('/');
            }
            for sq in hidden_start_squares(color) {
                out.push(match self.roles[sq.idx()] {
                    Some(role) => Piece { color, role }.char(),
                    None => '?',
                });
            }
        }
        out
    }

    /// The true role of the hidden piece on `sq`. Crate-private: the only door out is
    /// through the audience-aware APIs.
    #[inline]
    pub(crate) fn true_role(&self, sq: Square) -> Option<Role> {
        self.roles[sq.idx()]
    }
}

fn random_bytes<const N: usize>() -> Result<[u8; N], RandomError> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(|e| RandomError(e.to_string()))?;
    Ok(buf)
}

/// A uniform integer in `0..n` (n ≥ 1), by rejection sampling.
fn uniform_below(n: u32) -> Result<u32, RandomError> {
    let zone = u32::MAX - (u32::MAX % n);
    loop {
        let x = u32::from_le_bytes(random_bytes::<4>()?);
        if x < zone {
            return Ok(x % n);
        }
    }
}

/// A SHA-256 commitment to a layout, shown to both players when the game starts.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Commitment([u8; 32]);

impl Commitment {
    /// Commits to `layout` with `salt`: SHA-256 over the 32 salt bytes followed by the
    /// ASCII text [`COMMITMENT_DOMAIN`] and the layout's canonical encoding.
    fn compute(salt: &[u8; 32], canonical_layout: &str) -> Commitment {
        let mut hasher = Sha256::new();
        hasher.update(salt);
        hasher.update(COMMITMENT_DOMAIN.as_bytes());
        hasher.update(canonical_layout.as_bytes());
        Commitment(hasher.finalize().into())
    }

    /// Lower-case hex, 64 characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Commitment({})", self.to_hex())
    }
}

/// A layout with the salt of its commitment: the secret of one hidden game.
#[derive(Clone)]
pub struct Shuffle {
    layout: Layout,
    salt: [u8; 32],
    /// Worked out once: every view of the game shows it (a hash and the layout's
    /// canonical text on every move otherwise).
    commitment: Commitment,
}

impl fmt::Debug for Shuffle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Shuffle(<secret>)")
    }
}

/// A finished game's shuffle, published so anyone can check it against the commitment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedShuffle {
    /// The canonical layout string.
    pub layout: String,
    /// The salt, 64 hex characters.
    pub salt: String,
    /// The commitment shown at the start, 64 hex characters.
    pub commitment: String,
}

impl Shuffle {
    /// A random layout and a random salt.
    pub fn random() -> Result<Shuffle, RandomError> {
        Ok(Shuffle::new(Layout::random()?, random_bytes()?))
    }

    /// A chosen layout with a random salt (test-only server configuration fixes layouts
    /// this way; the salt keeps the commitment hiding).
    pub fn with_random_salt(layout: Layout) -> Result<Shuffle, RandomError> {
        Ok(Shuffle::new(layout, random_bytes()?))
    }

    /// A chosen layout and salt (tests, and test-only server configuration).
    pub fn new(layout: Layout, salt: [u8; 32]) -> Shuffle {
        let commitment = Commitment::compute(&salt, &layout.canonical());
        Shuffle {
            layout,
            salt,
            commitment,
        }
    }

    /// The commitment to show at the start.
    pub fn commitment(&self) -> Commitment {
        self.commitment
    }

    /// The salt (crate-internal: storage snapshots).
    pub(crate) fn salt(&self) -> [u8; 32] {
        self.salt
    }

    /// The layout (crate-internal).
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Salt, layout and commitment for publication. Crate-private: `Game` calls it only
    /// once the game is over.
    pub(crate) fn publish(&self) -> PublishedShuffle {
        PublishedShuffle {
            layout: self.layout.canonical(),
            salt: hex::encode(self.salt),
            commitment: self.commitment().to_hex(),
        }
    }
}

/// Why a published shuffle does not check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The salt is not 64 hex characters.
    #[error("the salt must be 64 hex characters")]
    Salt,
    /// The commitment is not 64 hex characters.
    #[error("the commitment must be 64 hex characters")]
    CommitmentFormat,
    /// The layout string is malformed.
    #[error("layout: {0}")]
    Layout(#[from] LayoutError),
    /// Well-formed, but the hash differs: the layout or salt is not what was committed to.
    #[error("salt and layout do not match the commitment")]
    Mismatch,
}

/// Checks a published shuffle against the commitment shown at the start of the game.
pub fn verify_shuffle(
    commitment_hex: &str,
    salt_hex: &str,
    layout: &str,
) -> Result<(), VerifyError> {
    let mut salt = [0u8; 32];
    hex::decode_to_slice(salt_hex, &mut salt).map_err(|_| VerifyError::Salt)?;
    let mut expected = [0u8; 32];
    hex::decode_to_slice(commitment_hex, &mut expected)
        .map_err(|_| VerifyError::CommitmentFormat)?;
    let parsed = Layout::from_canonical(layout)?;
    if Commitment::compute(&salt, &parsed.canonical()) == Commitment(expected) {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

/// What a hidden-chess move needs to land: the role that arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Landing {
    /// The role arriving on the destination (or, castling, on the corner piece's square).
    Role(Role),
    /// The mover turned out to be a pawn on its last rank and no choice was sent.
    NeedsPromotion,
}

/// The full server state of a hidden-chess position: the public position and the layout.
#[derive(Clone, PartialEq, Eq)]
pub struct HiddenState {
    pub(crate) position: Position,
    pub(crate) layout: Layout,
}

impl fmt::Debug for HiddenState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HiddenState({}, <secret>)", self.position.fen())
    }
}

impl HiddenState {
    /// The start position with this layout.
    pub fn new(layout: Layout) -> HiddenState {
        HiddenState {
            position: Position::new(Variant::Hidden),
            layout,
        }
    }

    /// Parses the server notation: the FEN of the *true* board, then the hidden squares.
    /// Every hidden square must be a non-king start square of its piece's colour.
    pub fn from_server_fen(fen: &str) -> Result<HiddenState, FenError> {
        let mut setup = Setup::parse(fen, true)?;
        check_material(Variant::Hidden, &setup.board)?;
        let mut roles = [None; 64];
        for sq in setup.hidden {
            let piece = setup
                .board
                .piece_at(sq)
                .ok_or(PositionError::HiddenNotOnStartSquare(sq))?;
            let apparent = match start_role(sq) {
                Some(role)
                    if role != Role::King
                        && crate::board::hidden_start_mask(piece.color).contains(sq) =>
                {
                    role
                }
                _ => return Err(PositionError::HiddenNotOnStartSquare(sq).into()),
            };
            if piece.role == Role::King {
                return Err(PositionError::HiddenNotOnStartSquare(sq).into());
            }
            roles[sq.idx()] = Some(piece.role);
            setup.board.set(
                sq,
                Piece {
                    color: piece.color,
                    role: apparent,
                },
            );
        }
        let position = Position::from_setup(Variant::Hidden, setup)?;
        Ok(HiddenState {
            position,
            layout: Layout { roles },
        })
    }

    /// The server notation of this state (true board). Secret: storage only.
    pub fn server_fen(&self) -> String {
        let mut setup = self.position.to_setup();
        for sq in self.position.hidden {
            if let (Some(color), Some(role)) = (setup.board.color_at(sq), self.layout.true_role(sq))
            {
                setup.board.set(sq, Piece { color, role });
            }
        }
        let mut out = String::with_capacity(128);
        setup.write_fen(&mut out, true);
        out
    }

    /// The public position.
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// What arrives when `m` is played (see [`landing`]).
    #[inline]
    pub(crate) fn landing(&self, m: &Move) -> Landing {
        landing(&self.position, &self.layout, m)
    }

    /// The true role of the piece on `sq` if it is hidden.
    #[inline]
    pub(crate) fn revealed(&self, sq: Square) -> Option<Role> {
        revealed(&self.position, &self.layout, sq)
    }

    /// Plays `m` with the landing role given.
    #[inline]
    pub(crate) fn make(&mut self, m: &Move, landed: Role) {
        self.position.make(m, landed);
    }
}

/// The true role of the piece on `sq` if it is hidden there.
#[inline]
pub(crate) fn revealed(pos: &Position, layout: &Layout, sq: Square) -> Option<Role> {
    if pos.hidden.contains(sq) {
        let role = layout.true_role(sq);
        debug_assert!(role.is_some(), "every hidden square has an identity");
        role
    } else {
        None
    }
}

/// What arrives when `m` is played: the mover's true role (or the promotion it is allowed),
/// or, castling, the corner piece's true role.
#[inline]
pub(crate) fn landing(pos: &Position, layout: &Layout, m: &Move) -> Landing {
    match m.kind {
        MoveKind::Castle { rook, .. } => {
            Landing::Role(revealed(pos, layout, rook).unwrap_or(Role::Rook))
        }
        MoveKind::Normal | MoveKind::EnPassant => {
            let true_role = revealed(pos, layout, m.from).unwrap_or(m.role);
            if true_role == Role::Pawn && m.to.rank() == pos.turn.promotion_rank() {
                match m.promotion {
                    Some(role) => Landing::Role(role),
                    None => Landing::NeedsPromotion,
                }
            } else {
                Landing::Role(true_role)
            }
        }
    }
}
