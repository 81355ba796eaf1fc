-- Billing with payment providers (billing/Billing.ts; README, "Billing").
--
-- The plan in force is kept on the organization row, where every plan-limit check already
-- reads it under the row's lock (inboxes, domains, webhooks, sends): Billing writes it in
-- the same transaction as the subscription change that moved it. `plan_until` bounds it
-- while a subscription is past_due: after the grace period the limits are Free's without a
-- write, so no job has to run on time for the rule to hold.
ALTER TABLE organizations ADD COLUMN plan_until timestamptz;

