-- 0004: a registered player's preferences of the web client (board look, piece set, 2D or
-- 3D board, sounds muted), kept with the account so that they follow the player to any
-- browser. The gateway validates them (known names only, at most 1 KiB) before storing
-- the JSON object it will hand back; one row per player, removed with the player.
CREATE TABLE player_preferences (
    player_id   uuid        PRIMARY KEY REFERENCES players (id) ON DELETE CASCADE,
    preferences jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
