"""Display-name pool. Single tokens (actions name players by them), some non-ASCII, none
sharing a prefix with an action keyword. Each episode draws its names with the env's RNG."""

NAME_POOL = (
    "Alice", "Bram", "Chidi", "Dana", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas",
    "Kaia", "Luca", "Mira", "Nikhil", "Oona", "Pablo", "Quinn", "Rosa", "Sven", "Tariq",
    "Uma", "Vera", "Wen", "Ximena", "Yusuf", "Zoë", "Björn", "Chloé", "Renée", "José",
    "Aroha", "Bea", "Cyrus", "Dmitri", "Esme", "Femi", "Gael", "Hana", "Ivo", "Jade",
)
