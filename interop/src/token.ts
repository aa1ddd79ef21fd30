// Mints and checks moq-token keys and tokens with @moq/token 0.2.3, the
// reference's npm package, for token_test.go:
//   generate --algorithm ALG        emits {"event":"key","json":PRIVATE,"message":PUBLIC}
//                                   (PUBLIC is "" for HMAC keys)
//   sign --key FILE --claims JSON   emits {"event":"token","message":JWT}
//   verify --key FILE --token JWT --root PATH
//                                   emits {"event":"claims","json":CLAIMS}
// Failures are an "error" event (common.ts run).
import * as Token from "@moq/token";
import { emit, parseFlags, required, run } from "./common.ts";

run(async () => {
  const [command, ...rest] = Deno.args;
  const flags = parseFlags(rest);
  switch (command) {
    case "generate": {
      const key = await Token.generate(required(flags, "algorithm") as Token.Algorithm);
      const pub = key.kty === "oct" ? "" : JSON.stringify(Token.toPublicKey(key));
      emit("key", { json: JSON.stringify(key), message: pub });
      break;
    }
    case "sign": {
      const key = Token.load(Deno.readTextFileSync(required(flags, "key")));
      const jwt = await Token.sign(key, JSON.parse(required(flags, "claims")));
      emit("token", { message: jwt });
      break;
    }
    case "verify": {
      const text = Deno.readTextFileSync(required(flags, "key"));
      let key: Token.PublicKey | Token.Key;
      try {
        key = Token.loadPublic(text);
      } catch {
        key = Token.load(text);
      }
      // deno-lint-ignore no-explicit-any
      const claims = await Token.verify(key as any, required(flags, "token"), flags.root ?? "");
      emit("claims", { json: JSON.stringify(claims) });
      break;
    }
    default:
      throw new Error(`unknown command ${command}: generate, sign or verify`);
  }
});
