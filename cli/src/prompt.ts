/** `lvmh prompt` and `lvmh abort`: steer a session's run, or stop it. */
import process from "node:process";
import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import type { PromptBody, PromptResult } from "../../lib/protocol.ts";
import { need, parse, readStdin } from "./args.ts";
import type { Command } from "./command.ts";
import { usage } from "./errors.ts";
import { api, enc } from "./http.ts";

/** The image types the daemon takes, by file extension. */
const MIME: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
};

export const prompt: Command = async (cfg, args) => {
  const { values, positionals } = parse(args, {
    "follow-up": { type: "boolean" },
    image: { type: "string", multiple: true },
    json: { type: "boolean" },
  });
  const [id, text] = need(positionals, 2, "a session id and the text");
  const message = text === "-" ? await readStdin() : text;
  const body: PromptBody = {
    message,
    deliverAs: values["follow-up"] ? "followUp" : "steer",
  };
  if (values.image?.length) {
    body.images = [];
    for (const file of values.image) {
      const mimeType = MIME[extname(file).toLowerCase()];
      if (!mimeType) {
        throw usage(`${file}: only .png, .jpg, .gif and .webp images`);
      }
      let data: string;
      try {
        data = (await readFile(file)).toString("base64");
      } catch (error) {
        throw usage(`cannot read ${file}: ${(error as Error).message}`);
      }
      body.images.push({ mimeType, data });
    }
  }
  const res = await api<PromptResult>(
    cfg,
    "POST",
    `/api/sessions/${enc(id)}/prompt`,
    body,
  );
  process.stdout.write(
    values.json ? JSON.stringify(res) + "\n" : `${res.promptId}\n`,
  );
};

export const abort: Command = async (cfg, args) => {
  const { positionals } = parse(args, {});
  const [id] = need(positionals, 1, "a session id");
  await api(cfg, "POST", `/api/sessions/${enc(id)}/abort`, {});
};
