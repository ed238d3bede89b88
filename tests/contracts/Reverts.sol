// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Calls that revert each way a client decodes: a reason string
/// (Error(string)), a panic code (Panic(uint256)) and a custom error.
contract Reverts {
    error Shortfall(uint256 needed, uint256 held);

    function withReason() external pure {
        revert("allowance");
    }

    function withPanic(uint256 index) external pure returns (uint256) {
        uint256[] memory none = new uint256[](1);
        return none[index];
    }

    function withCustomError() external pure {
        revert Shortfall(5, 3);
    }
}
