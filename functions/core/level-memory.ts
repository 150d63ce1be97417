/**
 * LevelDB's memory for each database the local service opens (the block
 * store's small blocks, the pin index, the embedded DynamoDB), smaller than
 * classic-level's defaults (8 MiB block cache, 4 MiB write buffer, of which
 * two can be held while one is written out): the server's memory budget is
 * shared, and the operating system's page cache keeps the table files' bytes
 * anyway. Options of classic-level's open():
 * https://github.com/Level/classic-level#dbopenoptions
 */
export const LEVEL_MEMORY = { cacheSize: 2 * 1024 * 1024, writeBufferSize: 1024 * 1024 } as const;
