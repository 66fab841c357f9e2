//! A finished game replayed with the rules library, and each mover's view at each ply.
//!
//! The replay holds the server's state (for hidden chess the layout, inside a
//! [`frontier_rules::Game`]) because only the true identities make the recorded moves
//! land as they did. The view it hands out for a ply is built from the audience-filtered
//! accessors only: [`Game::view`] for the mover's audience (public position, the
//! identities *this mover* captured) and [`frontier_rules::MoveReport::for_audience`] for
//! the public reveals. Nothing else of the layout reaches a [`SeatView`].

use frontier_engine::SeatView;
use frontier_rules::{
    Audience, Color, Game, HiddenState, Layout, MoveReport, Piece, Position, Role, UciMove,
    Variant, hidden_start_squares,
};

use crate::AnalysisError;

/// A game being replayed move by move.
#[derive(Debug, Clone)]
pub struct Replay {
    game: Game,
    /// Every public reveal so far: (owner, true role). The revealing move's mover owns it.
    reveals: Vec<(Color, Role)>,
    /// Repetition keys of every position before the current one, oldest first.
    keys: Vec<u64>,
}

impl Replay {
    /// The game at its start: `start_fen` (empty: the variant's start position; hidden
    /// chess: the public view FEN) and, for hidden chess with hidden pieces, the layout's
    /// canonical string (ignored in the other variants).
    pub fn start(
        variant: Variant,
        start_fen: &str,
        initial_layout: Option<&str>,
    ) -> Result<Replay, AnalysisError> {
        let position = if start_fen.trim().is_empty() {
            Position::new(variant)
        } else {
            Position::from_fen(variant, start_fen)
                .map_err(|e| AnalysisError::BadFen(e.to_string()))?
        };
        let game = if variant == Variant::Hidden && position.hidden().nonempty() {
            let canonical = initial_layout.ok_or(AnalysisError::MissingLayout)?;
            let state = hidden_state(&position, canonical)?;
            Game::from_hidden_state(state)
        } else {
            Game::from_position(position)
        };
        Ok(Replay {
            game,
            reveals: Vec::new(),
            keys: Vec::new(),
        })
    }

    /// The side to act now.
    pub fn mover(&self) -> Color {
        self.game.side_to_act()
    }

    /// Half-moves completed.
    pub fn ply(&self) -> u32 {
        self.game.ply()
    }

    /// The public position (hidden chess: hidden pieces as their apparent roles).
    pub fn position(&self) -> &Position {
        self.game.position()
    }

    /// Whether the game has ended (no further move can be played).
    pub fn is_over(&self) -> bool {
        self.game.outcome().is_some()
    }

    /// Whether the mover owes a promotion choice (hidden chess).
    pub fn promotion_pending(&self) -> bool {
        self.game.pending_promotion().is_some()
    }

    /// The number of legal moves now (0 while a promotion is pending or the game is over).
    pub fn legal_move_count(&self) -> u32 {
        self.game.legal_moves().len() as u32
    }

    /// What the side to act knows now, as the engine's input: standard and atomic the
    /// position with its repetition history; hidden chess the public position, every public
    /// reveal so far and the identities this side captured — never the layout.
    pub fn mover_view(&self) -> Result<SeatView, AnalysisError> {
        let mover = self.mover();
        let view = self.game.view(Audience::Player(mover));
        let since_irreversible = usize::try_from(view.position.halfmoves()).unwrap_or(usize::MAX);
        let keep = self.keys.len().min(since_irreversible);
        let history = self.keys[self.keys.len() - keep..].to_vec();
        if self.game.variant() != Variant::Hidden {
            return Ok(SeatView::open(mover, view.position, history));
        }
        let own_captures: Vec<Role> = view.captured_identities.iter().map(|c| c.role).collect();
        SeatView::hidden(
            mover,
            view.position,
            view.pending_promotion,
            history,
            &self.reveals,
            &own_captures,
        )
        .map_err(|e| AnalysisError::View {
            ply: self.ply() + 1,
            reason: e.to_string(),
        })
    }

    /// Plays the next recorded ply: a move in UCI, or — while a promotion is pending — the
    /// promotion choice, as the move with its promotion (`a7a8q`) or the role letter alone.
    pub fn play(&mut self, uci: &str) -> Result<(), AnalysisError> {
        let ply = self.ply() + 1;
        let bad = |reason: String| AnalysisError::IllegalMove {
            ply,
            uci: uci.to_owned(),
            reason,
        };
        if self.promotion_pending() {
            let role = promotion_choice(uci).ok_or_else(|| bad("a promotion is pending".into()))?;
            let report = self
                .game
                .choose_promotion(role)
                .map_err(|e| bad(e.to_string()))?;
            self.record(&report);
            return Ok(());
        }
        let parsed: UciMove = uci.parse().map_err(|e| bad(format!("{e}")))?;
        let key = self.game.position().repetition_key();
        let report = self
            .game
            .play_parsed(&parsed)
            .map_err(|e| bad(e.to_string()))?;
        self.keys.push(key);
        self.record(&report);
        Ok(())
    }

    /// Keeps the public facts of a move: its reveal, owned by its mover.
    fn record(&mut self, report: &MoveReport) {
        let event = report.for_audience(Audience::Spectator);
        if let Some(reveal) = event.reveal {
            self.reveals.push((event.mover, reveal.role));
        }
    }
}

/// The role of a promotion choice: `q` or `a7a8q`.
fn promotion_choice(uci: &str) -> Option<Role> {
    let letter = uci.chars().last()?;
    if uci.len() != 1 && uci.len() != 5 {
        return None;
    }
    Role::from_char(letter.to_ascii_lowercase()).filter(|r| r.is_promotion_target())
}

/// The server's state of a hidden game starting at `position` (a public view) with the
/// layout `canonical`: each hidden piece takes the identity the layout gives its square.
fn hidden_state(position: &Position, canonical: &str) -> Result<HiddenState, AnalysisError> {
    Layout::from_canonical(canonical).map_err(|e| AnalysisError::BadLayout(e.to_string()))?;
    let (white, black) = canonical
        .split_once('/')
        .ok_or_else(|| AnalysisError::BadLayout("no `/`".into()))?;
    let mut setup = position.to_setup();
    for (color, part) in [(Color::White, white), (Color::Black, black)] {
        for (sq, c) in hidden_start_squares(color).into_iter().zip(part.chars()) {
            if !position.hidden().contains(sq) {
                continue;
            }
            let piece = Piece::from_char(c)
                .filter(|p| p.color == color)
                .ok_or_else(|| AnalysisError::BadLayout(format!("`{c}` on {sq}")))?;
            setup.board.set(sq, piece);
        }
    }
    let mut fen = String::with_capacity(128);
    setup.write_fen(&mut fen, true);
    HiddenState::from_server_fen(&fen).map_err(|e| AnalysisError::BadLayout(e.to_string()))
}
