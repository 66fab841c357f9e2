-- 0003: guest expiry (SQLite form of migrations/gateway/0003_guest_expiry.sql).
CREATE INDEX players_guests_by_age ON players (created_at_ms) WHERE guest;
