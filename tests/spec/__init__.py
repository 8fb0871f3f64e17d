"""The spec language, the generator and its back ends (plain validators, Kaitai)."""
