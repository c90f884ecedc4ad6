-- Support desk: tickets, today's SLA targets and the knowledge base.
CREATE TABLE support_tickets (
    ticket_id   TEXT NOT NULL PRIMARY KEY,
    customer    TEXT NOT NULL,
    subject     TEXT NOT NULL,
    priority    TEXT NOT NULL,  -- urgent | high | normal | low
    status      TEXT NOT NULL,  -- open | waiting | solved
    opened_at   TEXT NOT NULL,
    order_total NUMERIC,
    last_update TEXT NOT NULL
);

INSERT INTO support_tickets VALUES
    ('T-479', 'Iris van Dam',   'Parcel marked delivered, not received', 'high',   'open',    '2025-04-14T08:12:00Z',  84.50, 'Carrier trace requested'),
    ('T-480', 'Tom Becker',     'Wrong size sent',                       'normal', 'waiting', '2025-04-14T09:40:00Z',  59.00, 'Return label sent, waiting for customer'),
    ('T-481', 'Maria Lopes',    'Refund for damaged lamp',               'urgent', 'open',    '2025-04-14T10:05:00Z', 149.00, 'Photos received; refund above 100 needs approval'),
    ('T-482', 'Ahmed Yilmaz',   'Cannot reset password',                 'low',    'solved',  '2025-04-13T16:20:00Z',   NULL, 'Reset link re-sent, customer confirmed'),
    ('T-483', 'Chloé Martin',   'Invoice needs company VAT number',      'normal', 'open',    '2025-04-14T11:30:00Z', 230.00, 'Asked for VAT number');

-- One ticket's card; the ticket context filters it by ticket_id.
CREATE VIEW support_ticket_card AS
SELECT ticket_id, customer, subject, priority, status, opened_at, order_total, last_update
FROM support_tickets;

-- The role's own queue: every ticket not yet solved.
CREATE VIEW support_queue AS
SELECT ticket_id, priority, subject, status
FROM support_tickets
WHERE status <> 'solved';

CREATE TABLE support_sla_targets (
    priority            TEXT    NOT NULL PRIMARY KEY,
    first_reply_minutes INTEGER NOT NULL,
    resolve_hours       INTEGER NOT NULL,
    staffed_today       INTEGER NOT NULL
);

INSERT INTO support_sla_targets VALUES
    ('urgent',  30,   8, 1),
    ('high',    60,  24, 1),
    ('normal', 240,  48, 1),
    ('low',    480, 120, 1);

CREATE VIEW support_sla_today AS
SELECT priority, first_reply_minutes, resolve_hours
FROM support_sla_targets
WHERE staffed_today = 1;

CREATE TABLE support_kb (
    article_id TEXT    NOT NULL PRIMARY KEY,
    title      TEXT    NOT NULL,
    summary    TEXT    NOT NULL,
    url        TEXT    NOT NULL,
    published  INTEGER NOT NULL
);

INSERT INTO support_kb VALUES
    ('kb-101', 'Reset your password',       'Use "Forgot password" on the sign-in page; the link lasts 30 minutes.', 'https://example.org/help/reset-password', 1),
    ('kb-114', 'Add a VAT number',          'Account, Billing details, VAT number; invoices issued after that show it.', 'https://example.org/help/vat-number', 1),
    ('kb-120', 'Export your order history', 'Account, Orders, Export as CSV.', 'https://example.org/help/export-orders', 1),
    ('kb-099', 'Old checkout (retired)',    'No longer applies.', 'https://example.org/help/old-checkout', 0);

CREATE VIEW support_kb_articles AS
SELECT article_id, title, summary, url FROM support_kb WHERE published = 1;
