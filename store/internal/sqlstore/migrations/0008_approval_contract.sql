-- 0008: an approval is for the contract its tool had when it was asked.
-- contract is the fingerprint of the tool's trusted contract (description,
-- input schema, annotations) at that time; '' for approvals asked before
-- this version, or by a journal that knows no contract. A call whose tool
-- now has another contract does not spend it: it asks again.
ALTER TABLE approvals ADD COLUMN contract TEXT NOT NULL DEFAULT '';
