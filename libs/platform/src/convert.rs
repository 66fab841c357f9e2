//! The one place where the platform's vocabulary crosses between its forms: the rules'
//! types (`Variant`, `Audience`, `Color`, `Role`), their protobuf forms (`games::Variant`,
//! `gamesession::Seat`) and their names on the wire (`standard`, `white`, `spectator`, …).
//! Every service converts through these functions, never by hand.

use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::v1 as session;
use frontier_protocol::BotLevel;
use frontier_rules::{Audience, Color, Role, Variant};

/// A variant's protobuf form.
pub fn variant_to_proto(variant: Variant) -> games::Variant {
    match variant {
        Variant::Standard => games::Variant::Standard,
        Variant::Hidden => games::Variant::Hidden,
        Variant::Atomic => games::Variant::Atomic,
    }
}

/// A variant from its protobuf form (`None` for unspecified or unknown values).
pub fn variant_from_proto(value: i32) -> Option<Variant> {
    match games::Variant::try_from(value).ok()? {
        games::Variant::Standard => Some(Variant::Standard),
        games::Variant::Hidden => Some(Variant::Hidden),
        games::Variant::Atomic => Some(Variant::Atomic),
        games::Variant::Unspecified => None,
    }
}

/// A variant from its wire name (`standard`, `hidden`, `atomic`).
pub fn variant_from_name(name: &str) -> Option<Variant> {
    name.parse().ok()
}

/// The seat of an audience.
pub fn seat_of(audience: Audience) -> session::Seat {
    match audience {
        Audience::Player(Color::White) => session::Seat::White,
        Audience::Player(Color::Black) => session::Seat::Black,
        Audience::Spectator => session::Seat::Spectator,
    }
}

/// The audience of a seat (unspecified or unknown seats see what spectators see).
pub fn audience_of_seat(value: i32) -> Audience {
    match session::Seat::try_from(value) {
        Ok(session::Seat::White) => Audience::Player(Color::White),
        Ok(session::Seat::Black) => Audience::Player(Color::Black),
        _ => Audience::Spectator,
    }
}

/// An audience's wire name: `white`, `black` or `spectator`.
pub fn audience_name(audience: Audience) -> &'static str {
    match audience {
        Audience::Player(color) => color.name(),
        Audience::Spectator => "spectator",
    }
}

/// A bot level's protobuf form.
pub fn bot_level_to_proto(level: BotLevel) -> games::BotLevel {
    match level {
        BotLevel::Easy => games::BotLevel::Easy,
        BotLevel::Medium => games::BotLevel::Medium,
        BotLevel::Hard => games::BotLevel::Hard,
    }
}

/// A bot level from its protobuf form (`None` for unspecified or unknown values).
pub fn bot_level_from_proto(value: i32) -> Option<BotLevel> {
    match games::BotLevel::try_from(value).ok()? {
        games::BotLevel::Easy => Some(BotLevel::Easy),
        games::BotLevel::Medium => Some(BotLevel::Medium),
        games::BotLevel::Hard => Some(BotLevel::Hard),
        games::BotLevel::Unspecified => None,
    }
}

/// A role from its wire name (`pawn`, `knight`, …).
pub fn role_from_name(name: &str) -> Option<Role> {
    Role::ALL.into_iter().find(|r| r.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_comes_back() {
        for v in Variant::ALL {
            assert_eq!(variant_from_proto(variant_to_proto(v) as i32), Some(v));
            assert_eq!(variant_from_name(v.name()), Some(v));
        }
        assert_eq!(variant_from_proto(0), None);
        for l in BotLevel::ALL {
            assert_eq!(bot_level_from_proto(bot_level_to_proto(l) as i32), Some(l));
            assert_eq!(BotLevel::parse(l.name()), Some(l));
        }
        assert_eq!(bot_level_from_proto(0), None);
        assert_eq!(variant_from_proto(99), None);
        for a in [
            Audience::Player(Color::White),
            Audience::Player(Color::Black),
            Audience::Spectator,
        ] {
            assert_eq!(audience_of_seat(seat_of(a) as i32), a);
        }
        assert_eq!(audience_of_seat(0), Audience::Spectator);
        assert_eq!(audience_name(Audience::Player(Color::Black)), "black");
        for r in Role::ALL {
            assert_eq!(role_from_name(r.name()), Some(r));
        }
    }
}
