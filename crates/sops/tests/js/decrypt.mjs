// Decrypts a sops file with the independent sops-age implementation and prints the result as
// JSON. Usage: node decrypt.mjs FILE TYPE(yaml|json|env) AGE_SECRET_KEY_FILE
import { readFileSync } from "node:fs";
import { decryptSops } from "sops-age";

const [file, fileType, keyFile] = process.argv.slice(2);
const secretKey = readFileSync(keyFile, "utf8")
  .split("\n")
  .find((line) => line.startsWith("AGE-SECRET-KEY-"));
const result = await decryptSops(readFileSync(file, "utf8"), { secretKey, fileType });
process.stdout.write(JSON.stringify(result));
