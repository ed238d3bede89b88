// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A plain ERC-20: the whole supply minted to the deployer.
contract Token {
    string public name;
    string public symbol;
    uint8 public constant decimals = 18;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor() {
        name = "Weiport Test Token";
        symbol = "WTT";
        _mint(msg.sender, 1_000_000 ether);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "allowance");
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - value;
        _move(from, to, value);
        return true;
    }

    /// Sends `value` to each of `to` in one transaction: several Transfer
    /// logs and several holders in one receipt.
    function spread(address[] calldata to, uint256 value) external {
        for (uint256 i = 0; i < to.length; i++) _move(msg.sender, to[i], value);
    }

    function _mint(address to, uint256 value) internal {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    /// The amount the recipient is credited; a plain token credits it all.
    function _credited(uint256 value) internal view virtual returns (uint256) {
        return value;
    }

    function _move(address from, address to, uint256 value) internal {
        require(balanceOf[from] >= value, "balance");
        balanceOf[from] -= value;
        uint256 credited = _credited(value);
        balanceOf[to] += credited;
        totalSupply -= value - credited;
        // The log says the full amount: a fee-on-transfer token whose logs
        // alone would give holders the wrong balance.
        emit Transfer(from, to, value);
    }
}

/// An ERC-20 that burns 1 % of every transfer while logging the full amount.
contract FeeToken is Token {
    constructor() {
        name = "Weiport Fee Token";
        symbol = "WFT";
    }

    function _credited(uint256 value) internal pure override returns (uint256) {
        return value - value / 100;
    }
}
