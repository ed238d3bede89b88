// ethers v6's EtherscanProvider, as a dApp backend uses it, pointed at
// weiport: only its base URL changes (ethers builds every URL in getUrl and
// getPostUrl, so those are what a subclass replaces).
//   node etherscan_ethers.js TOOLS_DIR INPUT_JSON
// INPUT_JSON: {"base", "apikey", "reverts", "token", "holder", "recipient"}.
// Prints one JSON object of what ethers made of each answer.
"use strict";

const path = require("path");
const ethers = require(path.join(process.argv[2], "node_modules", "ethers"));
const input = JSON.parse(process.argv[3]);

const ETHERSCAN = "https://api.etherscan.io/v2/api";

class WeiportEtherscan extends ethers.EtherscanProvider {
  getUrl(module, params) {
    return super.getUrl(module, params).replace(ETHERSCAN, input.base);
  }

  getPostUrl() {
    return super.getPostUrl().replace(ETHERSCAN, input.base);
  }
}

const provider = new WeiportEtherscan("mainnet", input.apikey);

// What ethers decoded of a reverted call: its reason and the error's name
// and arguments, or what it threw instead.
async function revertOf(call) {
  try {
    await call();
    return { reverted: false };
  } catch (error) {
    return {
      code: error.code,
      reason: error.reason ?? null,
      revert: error.revert
        ? { name: error.revert.name, args: error.revert.args.map(String) }
        : null,
      data: error.data ?? null,
    };
  }
}

async function main() {
  const reverts = new ethers.Contract(
    input.reverts,
    [
      "error Shortfall(uint256 needed, uint256 held)",
      "function withReason() view",
      "function withPanic(uint256 index) view returns (uint256)",
      "function withCustomError() view",
    ],
    provider,
  );
  const token = new ethers.Contract(
    input.token,
    [
      "function transfer(address to, uint256 value) returns (bool)",
      "function transferFrom(address from, address to, uint256 value) returns (bool)",
    ],
    provider,
  );
  const out = {};
  out.reason = await revertOf(() => reverts.withReason.staticCall());
  out.panic = await revertOf(() => reverts.withPanic.staticCall(2));
  out.custom = await revertOf(() => reverts.withCustomError.staticCall());
  out.allowance = await revertOf(() =>
    token.transferFrom.staticCall(input.holder, input.recipient, 1, {
      from: input.recipient,
    }),
  );
  // A transfer estimated from its holder (the sender must reach the node).
  out.estimate = String(
    await token.transfer.estimateGas(input.recipient, 1000n, { from: input.holder }),
  );
  out.called = await token.transfer.staticCall(input.recipient, 1000n, {
    from: input.holder,
  });
  // Slot 0 of the token (its name's storage), asked as ethers asks it.
  out.storage = await provider.getStorage(input.token, 0);
  // Sixteen calls at once on a key allowed five a second: each retried
  // until answered, as against Etherscan.
  const started = Date.now();
  // (Sixteen different questions: ethers would ask a repeated one once.)
  const heads = await Promise.allSettled(
    Array.from({ length: 16 }, (_, n) =>
      provider.getBalance(ethers.zeroPadValue(ethers.toBeHex(n + 1), 20)),
    ),
  );
  out.throttled = {
    answered: heads.filter((h) => h.status === "fulfilled").length,
    failed: heads
      .filter((h) => h.status === "rejected")
      .map((h) => String(h.reason && h.reason.shortMessage)),
    seconds: (Date.now() - started) / 1000,
  };
  console.log(JSON.stringify(out));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
