import assert from "node:assert/strict";
import { InvalidError, TooLargeError } from "./errors.ts";
import { checkImages, checkTextOnlySize, MAX_IMAGE_BYTES } from "./images.ts";

const b64 = (bytes: number[], pad = 0) => btoa(String.fromCharCode(...bytes, ...new Array(pad).fill(0)));

Deno.test("checkImages() takes each type by its magic bytes and refuses the rest", async (t) => {
  const good: [string, string][] = [
    ["image/png", b64([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 4)],
    ["image/jpeg", b64([0xff, 0xd8, 0xff, 0xe0], 8)],
    ["image/gif", btoa("GIF89a" + "\0".repeat(6))],
    ["image/webp", btoa("RIFF\0\0\0\0WEBPVP8 ")],
  ];
  await t.step("the four types", () => {
    for (const [mimeType, data] of good) assert.equal(checkImages([{ mimeType, data }]).length, 1, mimeType);
  });
  await t.step("bytes of another type, bad base64, unknown types", () => {
    const bad = [
      { mimeType: "image/png", data: good[1][1] },
      { mimeType: "image/webp", data: btoa("RIFF\0\0\0\0WAVEfmt ") },
      { mimeType: "image/png", data: "abc" },
      { mimeType: "image/png", data: "ab=c" },
      { mimeType: "image/tiff", data: good[0][1] },
    ];
    for (const img of bad) {
      assert.throws(() => checkImages([img]), InvalidError, JSON.stringify(img).slice(0, 60));
    }
  });
  await t.step("sizes are decoded sizes: 10 MiB passes, one byte more is too large", () => {
    const exact = good[0][1].slice(0, 12) + "A".repeat(Math.ceil(MAX_IMAGE_BYTES / 3) * 4 - 12);
    const size = (exact.length / 4) * 3;
    assert.ok(size >= MAX_IMAGE_BYTES);
    assert.throws(() => checkImages([{ mimeType: "image/png", data: exact }]), TooLargeError);
    const fits = good[0][1].slice(0, 12) + "A".repeat((MAX_IMAGE_BYTES / 3 | 0) * 4 - 12);
    assert.equal(checkImages([{ mimeType: "image/png", data: fits }]).length, 1);
  });
  await t.step("text-only bodies keep the ordinary limit", () => {
    assert.throws(() => checkTextOnlySize({ message: "x".repeat(300) }, 100), TooLargeError);
    checkTextOnlySize({ message: "x".repeat(300), images: [{}] }, 100);
  });
});
