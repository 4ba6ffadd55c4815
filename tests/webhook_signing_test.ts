/** Standard Webhooks signing against the specification's published example, and verification's refusals. */
import assert from "node:assert/strict";
import { generateSecret, isSecret, sign, verify } from "../lib/webhooks/signing.ts";

// The example of the Standard Webhooks specification and its reference libraries.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS = 1614265330;
const BODY = '{"test": 2432232314}';

Deno.test("webhooks/signing: the specification's example", async (t) => {
  await t.step("sign() gives the published signature", async () => {
    assert.equal(await sign(SECRET, ID, TS, BODY), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });
  const headers = (sig: string, ts = TS) =>
    new Headers({ "webhook-id": ID, "webhook-timestamp": String(ts), "webhook-signature": sig });
  await t.step("verify() accepts it among other signatures, within the tolerance", async () => {
    const sig = await sign(SECRET, ID, TS, BODY);
    assert.equal(
      await verify(SECRET, headers(`v1,bm9wZQ== ${sig}`), BODY, { now: TS * 1000 + 60_000 }),
      true,
    );
  });
  await t.step("verify() refuses a changed body, another secret, an old timestamp", async () => {
    const sig = await sign(SECRET, ID, TS, BODY);
    assert.equal(await verify(SECRET, headers(sig), BODY + " ", { now: TS * 1000 }), false);
    assert.equal(await verify(generateSecret(), headers(sig), BODY, { now: TS * 1000 }), false);
    assert.equal(await verify(SECRET, headers(sig), BODY, { now: (TS + 301) * 1000 }), false);
  });
  await t.step("generated secrets are valid; plain strings are not", () => {
    assert.equal(isSecret(generateSecret()), true);
    assert.equal(isSecret("whsec_short"), false);
    assert.equal(isSecret("secret-without-prefix-0123456789abcdef"), false);
  });
});
