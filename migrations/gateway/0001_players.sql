-- 0001: players.
-- Registered players and guests share one table so that game records can name both.
-- A registered username is unique case-insensitively (the unique index is on its
-- lower-cased key, for registered players only: guest names are generated and may repeat).
CREATE TABLE players (
    id            uuid        PRIMARY KEY,
    username      text        NOT NULL,
    username_key  text        NOT NULL,
    -- Argon2id PHC string; NULL for guests, who have no password.
    password_hash text,
    guest         boolean     NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (guest OR password_hash IS NOT NULL)
);

CREATE UNIQUE INDEX players_registered_username_key
    ON players (username_key) WHERE NOT guest;
