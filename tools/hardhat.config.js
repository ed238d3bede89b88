// The Hardhat node of the tests: its defaults (chain 31337, 20 funded
// accounts, automine), except that a reverting transaction is mined and its
// hash returned, as every other node does, instead of failing the call.
module.exports = {
  networks: {
    hardhat: { throwOnTransactionFailures: false, throwOnCallFailures: false },
  },
};
