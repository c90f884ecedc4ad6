-- The agency and its back office: one card per client, staff leave, the month's cash flow.
CREATE TABLE agency_clients (
    client_slug     TEXT    NOT NULL PRIMARY KEY,
    client_name     TEXT    NOT NULL,
    main_contact    TEXT    NOT NULL,
    retainer        NUMERIC NOT NULL,
    currency        TEXT    NOT NULL,
    renewal_on      TEXT    NOT NULL,
    active_campaign TEXT,
    open_requests   INTEGER NOT NULL
);

INSERT INTO agency_clients VALUES
    ('acme',    'Acme Corporation', 'Wile Coyote',     8000.00, 'EUR', '2025-09-30', 'Spring launch: anvils',       3),
    ('globex',  'Globex',           'Hank Scorpio',   12500.00, 'EUR', '2025-12-31', 'Brand refresh',               1),
    ('initech', 'Initech',          'Bill Lumbergh',   4500.00, 'EUR', '2025-06-30', NULL,                          0);

-- One client's card; the client context filters it by client_slug.
CREATE VIEW agency_client_card AS
SELECT client_slug, client_name, main_contact, retainer, currency, renewal_on,
       active_campaign, open_requests
FROM agency_clients;

CREATE TABLE hr_staff_leave (
    staff_id       TEXT    NOT NULL PRIMARY KEY,
    staff_name     TEXT    NOT NULL,
    days_allowed   INTEGER NOT NULL,
    days_taken     INTEGER NOT NULL,
    days_requested INTEGER NOT NULL
);

INSERT INTO hr_staff_leave VALUES
    ('s01', 'Noor',   25, 11, 0),
    ('s02', 'Pieter', 25,  4, 5),
    ('s03', 'Ayla',   20, 19, 0);

CREATE VIEW hr_leave_balances AS
SELECT staff_id, staff_name, days_allowed, days_taken, days_requested,
       days_allowed - days_taken AS days_left
FROM hr_staff_leave;

CREATE TABLE finance_ledger (
    entry_id  TEXT    NOT NULL PRIMARY KEY,
    period    TEXT    NOT NULL,  -- YYYY-MM
    line      TEXT    NOT NULL,
    client    TEXT,
    amount    NUMERIC NOT NULL   -- positive in, negative out
);

INSERT INTO finance_ledger VALUES
    ('e-0401', '2025-04', 'retainer',  'acme',    8000.00),
    ('e-0402', '2025-04', 'retainer',  'globex', 12500.00),
    ('e-0403', '2025-04', 'retainer',  'initech', 4500.00),
    ('e-0404', '2025-04', 'salaries',  NULL,    -18200.00),
    ('e-0405', '2025-04', 'rent',      NULL,     -2400.00),
    ('e-0320', '2025-03', 'retainer',  'acme',    8000.00);

-- client_slug marks a client's lines: in a client's room (MANIFEST tenancy) only theirs show.
CREATE VIEW finance_cashflow_month AS
SELECT entry_id, line, client AS client_slug, amount
FROM finance_ledger
WHERE period = '2025-04';
