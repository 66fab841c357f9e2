//! Integration tests live in tests/tests/*.rs. The library holds what both they and the
//! binaries use: the multi-instance rig of separate processes ([`rig`]).

pub mod rig;
