-- The desk's tables, the views its contexts and roles show, and a few sample rows.
CREATE TABLE desk_tickets (
    ticket_id   TEXT PRIMARY KEY,
    subject     TEXT NOT NULL,
    status      TEXT NOT NULL,
    client_slug TEXT NOT NULL
);
CREATE TABLE desk_events (ticket_id TEXT NOT NULL, at TEXT NOT NULL, note TEXT NOT NULL);
CREATE TABLE desk_clients (client_slug TEXT PRIMARY KEY, name TEXT NOT NULL);

CREATE VIEW desk_ticket_card AS
    SELECT ticket_id, subject, status, client_slug FROM desk_tickets;
CREATE VIEW desk_ticket_brief AS SELECT ticket_id, subject FROM desk_tickets;
CREATE VIEW desk_ticket_history AS SELECT ticket_id, at, note FROM desk_events;
CREATE VIEW desk_queue AS SELECT ticket_id, subject FROM desk_tickets WHERE status = 'open';
CREATE VIEW desk_sla AS
    SELECT 'standard' AS tier, 24 AS hours UNION ALL SELECT 'priority', 4;
CREATE VIEW desk_client_card AS SELECT client_slug, name FROM desk_clients;

INSERT INTO desk_clients VALUES ('acme', 'Acme Ltd'), ('globex', 'Globex');
INSERT INTO desk_tickets VALUES
    ('T-481', 'Refund for a double charge', 'open', 'acme'),
    ('T-482', 'Cannot log in', 'open', 'globex'),
    ('T-470', 'Invoice address', 'closed', 'acme');
INSERT INTO desk_events VALUES
    ('T-481', '2025-01-06T09:12:00Z', 'Customer sent the bank statement.'),
    ('T-470', '2025-01-02T15:40:00Z', 'Address changed; closed.');
