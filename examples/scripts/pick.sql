-- A pgbench script of your own: one account's balance, by a key drawn from pgbench's tables'
-- scale, as pgbench's select-only draws it.
\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
