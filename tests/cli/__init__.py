"""The command line as a whole: outputs, batches, edges, extract, start-up, check, the library's documents."""
