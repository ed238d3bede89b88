// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A minimal ERC-721 collection: mint, transfer, burn, each logged as the
/// standard logs it.
contract Collection {
    string public name = "Weiport Test Collection";
    string public symbol = "WTC";
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    function mint(address to, uint256 id) external {
        require(ownerOf[id] == address(0), "minted");
        ownerOf[id] = to;
        balanceOf[to] += 1;
        emit Transfer(address(0), to, id);
    }

    function transferFrom(address from, address to, uint256 id) external {
        require(ownerOf[id] == from && msg.sender == from, "not yours");
        ownerOf[id] = to;
        balanceOf[from] -= 1;
        balanceOf[to] += 1;
        emit Transfer(from, to, id);
    }

    function burn(uint256 id) external {
        address owner = ownerOf[id];
        require(owner == msg.sender, "not yours");
        delete ownerOf[id];
        balanceOf[owner] -= 1;
        emit Transfer(owner, address(0), id);
    }
}

/// A minimal ERC-1155 contract: mint, transfer one id or many at once, burn.
contract MultiToken {
    string public name = "Weiport Test Items";
    string public symbol = "WTI";
    mapping(uint256 => mapping(address => uint256)) private balances;

    function balanceOf(address account, uint256 id) external view returns (uint256) {
        return balances[id][account];
    }

    event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
    event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values);

    function mint(address to, uint256 id, uint256 value) external {
        balances[id][to] += value;
        emit TransferSingle(msg.sender, address(0), to, id, value);
    }

    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata) external {
        require(msg.sender == from, "not yours");
        balances[id][from] -= value;
        balances[id][to] += value;
        emit TransferSingle(msg.sender, from, to, id, value);
    }

    function safeBatchTransferFrom(
        address from,
        address to,
        uint256[] calldata ids,
        uint256[] calldata values,
        bytes calldata
    ) external {
        require(msg.sender == from && ids.length == values.length, "bad batch");
        for (uint256 i = 0; i < ids.length; i++) {
            balances[ids[i]][from] -= values[i];
            balances[ids[i]][to] += values[i];
        }
        emit TransferBatch(msg.sender, from, to, ids, values);
    }

    function burn(uint256 id, uint256 value) external {
        balances[id][msg.sender] -= value;
        emit TransferSingle(msg.sender, msg.sender, address(0), id, value);
    }
}
