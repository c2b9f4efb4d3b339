"""What can be rented and run: the GPU catalog, the model catalog, price offers and price files, the
import of a price file into a GPUs sheet, and exchange rates."""
