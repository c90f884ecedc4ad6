-- Billing: a freelancer's invoices. `status` is kept by the bookkeeping tool, so the
-- views need no date arithmetic (which SQLite and PostgreSQL spell differently).
CREATE TABLE billing_invoices (
    invoice_no       TEXT    NOT NULL PRIMARY KEY,
    client           TEXT    NOT NULL,
    amount           NUMERIC NOT NULL,
    currency         TEXT    NOT NULL,
    sent_on          TEXT    NOT NULL,
    due_on           TEXT    NOT NULL,
    status           TEXT    NOT NULL,  -- sent | overdue | paid
    days_overdue     INTEGER NOT NULL,
    last_reminded_on TEXT,
    paid_on          TEXT
);

INSERT INTO billing_invoices VALUES
    ('2025-031', 'Brightline Studio', 3250.00, 'EUR', '2025-02-03', '2025-03-05', 'overdue', 41, '2025-04-08', NULL),
    ('2025-034', 'Kettle & Co',        650.00, 'EUR', '2025-02-20', '2025-03-22', 'overdue', 24, NULL,         NULL),
    ('2025-036', 'Noordzee Media',    1950.00, 'EUR', '2025-03-01', '2025-03-31', 'overdue', 15, '2025-04-10', NULL),
    ('2025-038', 'Brightline Studio', 3000.00, 'EUR', '2025-03-17', '2025-04-16', 'sent',     0, NULL,         NULL),
    ('2025-029', 'Kettle & Co',       1300.00, 'EUR', '2025-01-27', '2025-02-26', 'paid',     0, NULL,         '2025-04-02'),
    ('2025-033', 'Harbor Apps',       4550.00, 'EUR', '2025-02-14', '2025-03-16', 'paid',     0, '2025-03-24', '2025-04-09');

CREATE VIEW billing_overdue AS
SELECT invoice_no, client, amount, currency, due_on, days_overdue, last_reminded_on
FROM billing_invoices
WHERE status = 'overdue';

CREATE VIEW billing_paid_this_month AS
SELECT invoice_no, client, amount, currency, paid_on
FROM billing_invoices
WHERE status = 'paid' AND paid_on >= '2025-04-01';
