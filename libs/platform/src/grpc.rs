//! Client error codes across internal gRPC calls, as a typed detail: a refused call's
//! `tonic::Status` carries the [`ErrorCode`] as the binary metadata `frontier-error-bin`
//! (an encoded `frontier.errors.v1.ErrorDetail`), and its message is text for people only.
//! Callers read the code with [`refusal_code`]; nothing parses a message.

use frontier_proto::errors::v1 as pb;
use frontier_protocol::ErrorCode;
use prost::Message as _;
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

/// The metadata key of the detail.
pub const ERROR_DETAIL_KEY: &str = "frontier-error-bin";

macro_rules! both_ways {
    ($($v:ident => $p:ident),* $(,)?) => {
        /// The wire form of a client error code.
        pub fn to_proto(code: ErrorCode) -> pb::ErrorCode {
            match code { $(ErrorCode::$v => pb::ErrorCode::$p),* }
        }

        /// A client error code from its wire form (`None` for unspecified or unknown).
        pub fn from_proto(code: pb::ErrorCode) -> Option<ErrorCode> {
            match code {
                $(pb::ErrorCode::$p => Some(ErrorCode::$v),)*
                pb::ErrorCode::Unspecified => None,
            }
        }
    };
}

both_ways! {
    BadJson => BadJson,
    UnknownType => UnknownType,
    BadField => BadField,
    TooLarge => TooLarge,
    RateLimited => RateLimited,
    Unauthenticated => Unauthenticated,
    AlreadyAuthenticated => AlreadyAuthenticated,
    TokenMissing => TokenMissing,
    TokenMalformed => TokenMalformed,
    TokenExpired => TokenExpired,
    TokenInvalid => TokenInvalid,
    GameNotFound => GameNotFound,
    PlayerNotFound => PlayerNotFound,
    NotInGame => NotInGame,
    NotYourTurn => NotYourTurn,
    IllegalMove => IllegalMove,
    BadMove => BadMove,
    PromotionRequired => PromotionRequired,
    PromotionPending => PromotionPending,
    NoPromotionPending => NoPromotionPending,
    GameOver => GameOver,
    GameNotStarted => GameNotStarted,
    StaleVersion => StaleVersion,
    NoDrawOffer => NoDrawOffer,
    DrawAlreadyOffered => DrawAlreadyOffered,
    CannotAbort => CannotAbort,
    CannotClaim => CannotClaim,
    BoardNotFound => BoardNotFound,
    BoardFull => BoardFull,
    BoardFinished => BoardFinished,
    OwnBoard => OwnBoard,
    GuestRated => GuestRated,
    BadTimeControl => BadTimeControl,
    UsernameTaken => UsernameTaken,
    BadUsername => BadUsername,
    WeakPassword => WeakPassword,
    BadCredentials => BadCredentials,
    NotFound => NotFound,
    MethodNotAllowed => MethodNotAllowed,
    Unavailable => Unavailable,
    Internal => Internal,
    TooManyBoards => TooManyBoards,
    UndoNotAllowed => UndoNotAllowed,
    AlreadyMatched => AlreadyMatched,
    GameNotOver => GameNotOver,
    RematchUnavailable => RematchUnavailable,
    RematchAlreadyOffered => RematchAlreadyOffered,
    NoRematchOffer => NoRematchOffer,
    TooManyGames => TooManyGames,
    RegisteredOnly => RegisteredOnly,
    Forbidden => Forbidden,
    ReportNotFound => ReportNotFound,
    AlreadyDecided => AlreadyDecided,
    FairPlayRestricted => FairPlayRestricted
}

/// The gRPC status code that best describes a refusal with this client code.
fn grpc_code(code: ErrorCode) -> Code {
    match code {
        ErrorCode::GameNotFound
        | ErrorCode::BoardNotFound
        | ErrorCode::PlayerNotFound
        | ErrorCode::ReportNotFound
        | ErrorCode::NotFound => Code::NotFound,
        ErrorCode::NotInGame | ErrorCode::Forbidden => Code::PermissionDenied,
        ErrorCode::BadField
        | ErrorCode::BadJson
        | ErrorCode::BadMove
        | ErrorCode::BadTimeControl
        | ErrorCode::TooLarge => Code::InvalidArgument,
        ErrorCode::RateLimited => Code::ResourceExhausted,
        ErrorCode::Unavailable => Code::Unavailable,
        ErrorCode::Internal => Code::Internal,
        _ => Code::FailedPrecondition,
    }
}

/// A refused call: the status for `code`, with the code attached as a typed detail.
pub fn refusal(code: ErrorCode, message: impl Into<String>) -> Status {
    let mut status = Status::new(grpc_code(code), message.into());
    let detail = pb::ErrorDetail {
        code: to_proto(code) as i32,
    };
    status.metadata_mut().insert_bin(
        ERROR_DETAIL_KEY,
        MetadataValue::from_bytes(&detail.encode_to_vec()),
    );
    status
}

/// The client error code a status carries, if it carries one.
pub fn refusal_code(status: &Status) -> Option<ErrorCode> {
    let value = status.metadata().get_bin(ERROR_DETAIL_KEY)?;
    let bytes = value.to_bytes().ok()?;
    let detail = pb::ErrorDetail::decode(bytes.as_ref()).ok()?;
    from_proto(pb::ErrorCode::try_from(detail.code).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_crosses_and_comes_back() {
        for n in 1.. {
            let Ok(wire) = pb::ErrorCode::try_from(n) else {
                break;
            };
            let code = from_proto(wire).expect("every wire code has a client code");
            assert_eq!(to_proto(code), wire);
            let status = refusal(code, "text");
            assert_eq!(refusal_code(&status), Some(code));
            assert_eq!(status.message(), "text", "the message is text only");
        }
        assert_eq!(refusal_code(&Status::internal("internal: x")), None);
    }
}
